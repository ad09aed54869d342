package traffic

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"unsafe"

	"github.com/aivis/aivis/core/store"
)

// DefaultMaxBatch is the most content, decompressed, Read takes from one
// batch when it is given no limit.
const DefaultMaxBatch = 256 << 20

// maxRecord is the longest line or JSON entry a reader takes; a longer
// one is malformed.
const maxRecord = 1 << 20

// ErrTooLarge is Read's error for a batch whose content, decompressed,
// passes the limit.
var ErrTooLarge = errors.New("traffic: batch too large")

// ErrGzip is Read's error for a gzip-compressed batch that cannot be
// decompressed (a bad header, corrupt data, a wrong checksum, cut short);
// the decompressor's own error is wrapped too.
var ErrGzip = errors.New("traffic: broken gzip compression")

// Sink takes, in order, what a reader finds in a batch's records: a
// record is a line (NDJSON, log lines) or an entry of a JSON array,
// numbered from 1.
type Sink interface {
	// Line takes a request read from record n, whose bytes are raw. raw,
	// l and l's strings are valid only during the call.
	Line(n int, raw []byte, l *Line)
	// Malformed takes record n, that could not be read, and why.
	Malformed(n int, raw []byte, reason string)
}

// Batch is what Read found in one delivery.
type Batch struct {
	// Hash is the SHA-256 of the content, decompressed: the same batch
	// sent again, compressed anew, has the same.
	Hash []byte
	// Lines counts the records read, malformed ones included; records
	// that are no request (a Vercel entry without proxy, a blank line)
	// are not counted.
	Lines     int64
	Malformed int64
	// Samples are the first malformed records of the Aggregator, this
	// batch's among them.
	Samples []store.MalformedLine
	// Validation is set for Cloudflare's validation upload: the endpoint
	// answers it with success and keeps nothing.
	Validation bool
}

// Read reads one batch of source (store.TrafficCloudflare,
// TrafficVercel, TrafficFastly or TrafficFile) from body, gzip-compressed
// or not (told by its magic bytes: Content-Encoding is not relied on),
// and adds its requests to agg. Its error is for a body that cannot be
// read at all: an unknown source, broken compression, content past max
// bytes decompressed (ErrTooLarge; DefaultMaxBatch when max <= 0), a
// failed read. A malformed record is counted, never an error. After an
// error, agg holds part of the batch: drop it.
func Read(source string, body io.Reader, agg *Aggregator, max int64) (Batch, error) {
	read, ok := readers[source]
	if !ok {
		return Batch{}, fmt.Errorf("traffic: unknown source %q", source)
	}
	if max <= 0 {
		max = DefaultMaxBatch
	}
	br := bufio.NewReaderSize(body, 32<<10)
	var content io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Batch{}, fmt.Errorf("%w: %w", ErrGzip, err)
		}
		defer zr.Close()
		content = zr
	}
	cr := &contentReader{r: content, h: sha256.New(), left: max, gzip: content != br}
	lines, malformed := agg.lines, agg.malformed
	if err := read(cr, agg); err != nil {
		return Batch{}, err
	}
	// The hash covers what follows a JSON array's end too.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return Batch{}, err
	}
	b := Batch{
		Hash:      cr.h.Sum(nil),
		Lines:     agg.lines - lines,
		Malformed: agg.malformed - malformed,
		Samples:   agg.Samples(),
	}
	if source == store.TrafficCloudflare && b.Lines == 0 && cr.n <= int64(len(cr.head)) {
		b.Validation = IsCloudflareValidation(cr.head[:cr.n])
	}
	return b, nil
}

// readers read each source's content.
var readers = map[string]func(io.Reader, Sink) error{
	store.TrafficCloudflare: ReadCloudflare,
	store.TrafficVercel:     ReadVercel,
	store.TrafficFastly:     ReadFastly,
	store.TrafficFile:       ReadCombined,
}

// contentReader hashes and counts a batch's content as it is read, and
// keeps its first bytes.
type contentReader struct {
	r    io.Reader
	gzip bool // r decompresses
	h    hash.Hash
	left int64
	n    int64
	head [64]byte
}

func (c *contentReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if int64(n) > c.left {
		return 0, ErrTooLarge
	}
	c.left -= int64(n)
	if c.n < int64(len(c.head)) {
		copy(c.head[c.n:], p[:n])
	}
	c.n += int64(n)
	c.h.Write(p[:n])
	if err != nil && err != io.EOF {
		var corrupt flate.CorruptInputError
		if c.gzip && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
			errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &corrupt)) {
			return n, fmt.Errorf("%w: %w", ErrGzip, err)
		}
		return n, fmt.Errorf("traffic: reading the batch: %w", err)
	}
	return n, err
}

// lineReader gives a stream's lines one at a time, each valid until the
// next.
type lineReader struct {
	br   *bufio.Reader
	long []byte
	n    int // the number of the last line given
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its end (\n or \r\n); tooLong when
// it passed maxRecord, in which case line is its start. err is io.EOF
// after the last line.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	line, err = lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.long = append(lr.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = lr.br.ReadSlice('\n')
			if len(lr.long)+len(line) > maxRecord {
				tooLong = true
			} else {
				lr.long = append(lr.long, line...)
			}
		}
		line = lr.long
	}
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	if len(line) == 0 && err == io.EOF {
		return nil, false, io.EOF
	}
	lr.n++
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, tooLong, nil
}

// eachLine calls fn with each line of r that is not blank; a line too
// long is malformed.
func eachLine(r io.Reader, s Sink, fn func(n int, line []byte)) error {
	lr := newLineReader(r)
	for {
		line, tooLong, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case tooLong:
			s.Malformed(lr.n, line, "line too long")
		case len(bytes.TrimSpace(line)) > 0:
			fn(lr.n, line)
		}
	}
}

// str is b as a string without a copy: valid only while b is unchanged.
func str(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// splitTarget splits a request target into path and query, taking the
// path of an absolute URI.
func splitTarget(t []byte) (path, query []byte) {
	if len(t) > 0 && t[0] != '/' {
		if i := bytes.Index(t, []byte("://")); i > 0 && i < 8 {
			rest := t[i+3:]
			j := bytes.IndexAny(rest, "/?")
			switch {
			case j < 0:
				t = []byte("/")
			case rest[j] == '?':
				t = append([]byte("/"), rest[j:]...)
			default:
				t = rest[j:]
			}
		}
	}
	if i := bytes.IndexByte(t, '?'); i >= 0 {
		return t[:i], t[i+1:]
	}
	return t, nil
}
