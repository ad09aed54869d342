"""The build backend (build_backend/aivis_build.py): the wheel and the sdist it makes, with and without tomllib."""

import base64
import hashlib
import importlib.util
import os
import tarfile
import tempfile
import unittest
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def load_backend():
    spec = importlib.util.spec_from_file_location("aivis_build", os.path.join(ROOT, "build_backend", "aivis_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BuildTest(unittest.TestCase):
    def check_wheel(self, backend):
        with tempfile.TemporaryDirectory() as out:
            name = backend.build_wheel(out)
            self.assertEqual(name, "aivis-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(out, name)) as z:
                names = set(z.namelist())
                self.assertLessEqual({"aivis/__init__.py", "aivis/client.py", "aivis/models.py", "aivis/errors.py",
                                      "aivis/webhook.py", "aivis/py.typed", "aivis-0.1.0.dist-info/METADATA",
                                      "aivis-0.1.0.dist-info/WHEEL", "aivis-0.1.0.dist-info/RECORD"}, names)
                self.assertFalse([n for n in names if "__pycache__" in n or n.startswith("tests/")])
                meta = z.read("aivis-0.1.0.dist-info/METADATA").decode()
                self.assertIn("Name: aivis\nVersion: 0.1.0\n", meta)
                self.assertIn("Requires-Python: >=3.9\n", meta)
                # RECORD lists every other file with its hash and size.
                record = z.read("aivis-0.1.0.dist-info/RECORD").decode().splitlines()
                listed = {}
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    listed[path] = (digest, size)
                self.assertEqual(set(listed), names)
                for path, (digest, size) in listed.items():
                    if path.endswith("RECORD"):
                        continue
                    data = z.read(path)
                    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, size), (want, str(len(data))), path)

    def test_wheel(self):
        self.check_wheel(load_backend())

    def test_wheel_without_tomllib(self):
        # Python before 3.11 has no tomllib: the backend reads the two keys itself.
        backend = load_backend()
        backend.tomllib = None
        self.check_wheel(backend)

    def test_sdist_builds_again(self):
        backend = load_backend()
        with tempfile.TemporaryDirectory() as out:
            name = backend.build_sdist(out)
            self.assertEqual(name, "aivis-0.1.0.tar.gz")
            with tarfile.open(os.path.join(out, name)) as tar:
                tar.extractall(out, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
            tree = os.path.join(out, "aivis-0.1.0")
            for f in ("pyproject.toml", "README.md", "PKG-INFO", "build_backend/aivis_build.py", "aivis/client.py"):
                self.assertTrue(os.path.exists(os.path.join(tree, f)), f)
            spec = importlib.util.spec_from_file_location("aivis_build_sdist",
                                                          os.path.join(tree, "build_backend", "aivis_build.py"))
            again = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(again)
            self.check_wheel(again)
            self.assertEqual(again.get_requires_for_build_wheel(), [])


if __name__ == "__main__":
    unittest.main()
