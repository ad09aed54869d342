// Package fault defines the errors that services return to their callers and
// that the API and dashboard show to users. One table (Status) maps each code
// to its HTTP status, so no handler decides a status on its own.
package fault

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Code is a stable, documented error code (decisions.md section 2).
type Code string

const (
	InvalidJSON            Code = "INVALID_JSON"
	ValidationError        Code = "VALIDATION_ERROR"
	MissingCredentials     Code = "MISSING_CREDENTIALS"
	InvalidCredentials     Code = "INVALID_CREDENTIALS"
	KeyExpired             Code = "KEY_EXPIRED"
	KeyRevoked             Code = "KEY_REVOKED"
	MonthlyBudgetExceeded  Code = "MONTHLY_BUDGET_EXCEEDED"
	InsufficientScope      Code = "INSUFFICIENT_SCOPE"
	PlanNotAllowed         Code = "PLAN_NOT_ALLOWED"
	HTTPSRequired          Code = "HTTPS_REQUIRED"
	NotFound               Code = "NOT_FOUND"
	MethodNotAllowed       Code = "METHOD_NOT_ALLOWED"
	IdempotencyConflict    Code = "IDEMPOTENCY_CONFLICT"
	InvalidState           Code = "INVALID_STATE"
	PayloadTooLarge        Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMediaType   Code = "UNSUPPORTED_MEDIA_TYPE"
	BudgetExceedsTierLimit Code = "BUDGET_EXCEEDS_TIER_LIMIT"
	WebhookVerification    Code = "WEBHOOK_VERIFICATION_FAILED"
	ConnectorUnavailable   Code = "CONNECTOR_UNAVAILABLE"
	DomainLimitReached     Code = "DOMAIN_LIMIT_REACHED"
	WebhookLimitReached    Code = "WEBHOOK_LIMIT_REACHED"
	ConnectionLimitReached Code = "CONNECTION_LIMIT_REACHED"
	PromptLimitReached     Code = "PROMPT_LIMIT_REACHED"
	MarketLimitReached     Code = "MARKET_LIMIT_REACHED"
	AlreadyExists          Code = "ALREADY_EXISTS"
	RateLimitExceeded      Code = "RATE_LIMIT_EXCEEDED"
	ActiveRequestLimit     Code = "ACTIVE_REQUEST_LIMIT_EXCEEDED"
	RateLimitUnavailable   Code = "RATE_LIMIT_UNAVAILABLE"
	ServiceUnavailable     Code = "SERVICE_UNAVAILABLE"
	Internal               Code = "INTERNAL_ERROR"
)

var statuses = map[Code]int{
	InvalidJSON:            http.StatusBadRequest,
	ValidationError:        http.StatusBadRequest,
	MissingCredentials:     http.StatusUnauthorized,
	InvalidCredentials:     http.StatusUnauthorized,
	KeyExpired:             http.StatusUnauthorized,
	KeyRevoked:             http.StatusUnauthorized,
	MonthlyBudgetExceeded:  http.StatusPaymentRequired,
	InsufficientScope:      http.StatusForbidden,
	PlanNotAllowed:         http.StatusForbidden,
	HTTPSRequired:          http.StatusForbidden,
	NotFound:               http.StatusNotFound,
	MethodNotAllowed:       http.StatusMethodNotAllowed,
	IdempotencyConflict:    http.StatusConflict,
	InvalidState:           http.StatusConflict,
	PayloadTooLarge:        http.StatusRequestEntityTooLarge,
	UnsupportedMediaType:   http.StatusUnsupportedMediaType,
	BudgetExceedsTierLimit: http.StatusUnprocessableEntity,
	WebhookVerification:    http.StatusUnprocessableEntity,
	ConnectorUnavailable:   http.StatusServiceUnavailable,
	DomainLimitReached:     http.StatusForbidden,
	WebhookLimitReached:    http.StatusForbidden,
	ConnectionLimitReached: http.StatusForbidden,
	PromptLimitReached:     http.StatusForbidden,
	MarketLimitReached:     http.StatusForbidden,
	AlreadyExists:          http.StatusConflict,
	RateLimitExceeded:      http.StatusTooManyRequests,
	ActiveRequestLimit:     http.StatusTooManyRequests,
	RateLimitUnavailable:   http.StatusServiceUnavailable,
	ServiceUnavailable:     http.StatusServiceUnavailable,
	Internal:               http.StatusInternalServerError,
}

// Status is the HTTP status of a code; unknown codes are internal errors.
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Codes lists every code, sorted.
func Codes() []Code {
	cs := make([]Code, 0, len(statuses))
	for c := range statuses {
		cs = append(cs, c)
	}
	slices.Sort(cs)
	return cs
}

// FieldError names one field of a request that breaks a rule.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is an error meant for the user: its message is safe to show.
type Error struct {
	Code       Code
	Message    string
	RetryAfter int // seconds; > 0 only on errors made by Wait
	Details    []FieldError
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wait returns an error asking the client to wait retryAfter whole seconds
// (at least 1) before it tries again: a code answered with 429, or a 503
// (RATE_LIMIT_UNAVAILABLE, SERVICE_UNAVAILABLE). The message ends with the
// same wait, as every 429's does (service spec section 7).
func Wait(code Code, retryAfter int, format string, args ...any) *Error {
	retryAfter = max(retryAfter, 1)
	return &Error{Code: code, RetryAfter: retryAfter,
		Message: fmt.Sprintf(format, args...) + fmt.Sprintf("; retry after %d seconds", retryAfter)}
}

// UnavailableRetry is the wait, in seconds, that SERVICE_UNAVAILABLE asks
// for.
const UnavailableRetry = 5

// Unavailable is SERVICE_UNAVAILABLE: what the service needs to answer
// (its store) cannot be reached at the moment. The message names nothing
// of what or where that is.
func Unavailable() *Error {
	return Wait(ServiceUnavailable, UnavailableRetry, "the service is briefly unavailable")
}

// Invalid returns a VALIDATION_ERROR listing the fields at fault.
func Invalid(details ...FieldError) *Error {
	msg := "the request is invalid"
	if len(details) == 1 {
		msg = details[0].Field + ": " + details[0].Message
	} else if len(details) > 1 {
		msg = fmt.Sprintf("%d fields are invalid; see details", len(details))
	}
	return &Error{Code: ValidationError, Message: msg, Details: details}
}

// As extracts the user-facing error from err, if there is one.
func As(err error) (*Error, bool) {
	var fe *Error
	ok := errors.As(err, &fe)
	return fe, ok
}

// Fields collects field errors while a request is validated.
type Fields []FieldError

// Add records that field breaks a rule.
func (f *Fields) Add(field, format string, args ...any) {
	*f = append(*f, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err is nil when no field was at fault, else a VALIDATION_ERROR.
func (f Fields) Err() error {
	if len(f) == 0 {
		return nil
	}
	return Invalid(f...)
}
