"""A PEP 517 build backend on the standard library alone, for this package only.

It builds the wheel (the aivis package and its dist-info) and the sdist
(the tree pip needs to build that wheel again) from pyproject.toml's
[project] name and version; the package has no dependencies and no
compiled parts, so nothing more is needed. pip runs it for
`pip install ./sdk/python` without fetching anything.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11: the two keys read here, by hand
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "aivis"


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        raw = f.read()
    if tomllib is not None:
        p = tomllib.loads(raw.decode("utf-8"))["project"]
        return p["name"], p["version"], p.get("description", ""), p.get("requires-python", "")
    fields = {}
    section = None
    for line in raw.decode("utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[project]" and "=" in line:
            k, v = (s.strip() for s in line.split("=", 1))
            if v.startswith('"'):
                fields[k] = v.strip('"')
    return fields["name"], fields["version"], fields.get("description", ""), fields.get("requires-python", "")


def _metadata():
    name, version, description, requires_python = _project()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    head = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version, "Summary: " + description]
    if requires_python:
        head.append("Requires-Python: " + requires_python)
    head.append("Description-Content-Type: text/markdown")
    return name, version, "\n".join(head) + "\n\n" + readme


def _package_files():
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".py", ".typed")):
                full = os.path.join(dirpath, fn)
                out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return out


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, metadata = _metadata()
    dist_info = "%s-%s.dist-info" % (name, version)
    wheel_name = "%s-%s-py3-none-any.whl" % (name, version)
    files = [(arc, _read(full)) for arc, full in _package_files()]
    files.append((dist_info + "/METADATA", metadata.encode("utf-8")))
    files.append((dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: aivis_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(arc, data) for arc, data in files] + [dist_info + "/RECORD,,"]
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = "%s-%s" % (name, version)
    sdist_name = base + ".tar.gz"
    members = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")), ("README.md", os.path.join(ROOT, "README.md")),
               ("build_backend/aivis_build.py", os.path.abspath(__file__))] + _package_files()
    with tarfile.open(os.path.join(sdist_directory, sdist_name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(arc, data):
            info = tarfile.TarInfo(base + "/" + arc)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
        add("PKG-INFO", metadata.encode("utf-8"))
        for arc, full in members:
            add(arc, _read(full))
    return sdist_name
