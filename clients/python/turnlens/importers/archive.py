"""Safe extraction of a tar or zip archive (an uploaded rollout_data_dir, logdir or mlruns store).

Refused with an ArchiveError naming the member, before or while anything is written: absolute
names, `..` components, links of any kind (a symlink or hard link could point out of the folder),
devices and FIFOs, more than `max_files` members, and more than `max_bytes` of content (counted
while decompressing, so a tar bomb stops at the limit whatever sizes its headers claim). A zip is
refused before anything is extracted when its members' sizes add up to more than `max_bytes` or one
member expands more than `max_ratio` times its compressed size (1 GB of zeros is 1 MB of deflate).
A full disk is not the archive's fault: its OSError (ENOSPC, EDQUOT) is raised as it is.
"""

import errno
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO, Optional

MAX_BYTES = int(float(os.environ.get("TURNLENS_IMPORT_MAX_EXTRACT_MB", "2048")) * 1024 * 1024)
MAX_FILES = int(os.environ.get("TURNLENS_IMPORT_MAX_FILES", "100000"))
# Real logs compress 3-30x (JSONL, event files); a deflate bomb of zeros, ~1000x.
MAX_RATIO = float(os.environ.get("TURNLENS_IMPORT_MAX_RATIO", "200"))
# Members up to this size are not held to the ratio (a small file of repeated text compresses well).
_RATIO_FREE = 1 << 20
_CHUNK = 1 << 20
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class ArchiveError(ValueError):
    pass


def kind_of(path: str) -> Optional[str]:
    """"zip", "tar" or None (not an archive: read the file as it is). By content, not by name."""
    p = Path(path)
    if not p.is_file():
        return None
    if zipfile.is_zipfile(p):
        return "zip"
    try:
        if tarfile.is_tarfile(p):
            return "tar"
    except (OSError, EOFError, tarfile.TarError):
        return None
    return None


def _safe_name(name: str) -> PurePosixPath:
    n = name.replace("\\", "/")
    p = PurePosixPath(n)
    if n.startswith("/") or (len(n) > 1 and n[1] == ":") or p.is_absolute():
        raise ArchiveError(f"archive member {name!r}: absolute path refused")
    if any(part == ".." for part in p.parts):
        raise ArchiveError(f"archive member {name!r}: '..' in the path refused (path traversal)")
    return p


class _Budget:
    def __init__(self, max_bytes: int, max_files: int):
        self.bytes_left = max_bytes
        self.files_left = max_files
        self.max_bytes, self.max_files = max_bytes, max_files

    def file(self, name: str) -> None:
        self.files_left -= 1
        if self.files_left < 0:
            raise ArchiveError(f"archive has more than {self.max_files} files (limit TURNLENS_IMPORT_MAX_FILES); refused at {name!r}")

    def too_big(self, name: str) -> ArchiveError:
        return ArchiveError(f"archive expands to more than {self.max_bytes // (1024 * 1024)} MB "
                            f"(limit TURNLENS_IMPORT_MAX_EXTRACT_MB); refused at {name!r}")

    def copy(self, src: IO[bytes], dest: Path, name: str) -> None:
        """Streams one member to `dest` a chunk at a time."""
        with open(dest, "xb") as out:
            while True:
                chunk = src.read(min(_CHUNK, self.bytes_left + 1))
                if not chunk:
                    return
                self.bytes_left -= len(chunk)
                if self.bytes_left < 0:
                    raise self.too_big(name)
                out.write(chunk)


def _target(dest: Path, rel: PurePosixPath) -> Path:
    t = (dest / Path(*rel.parts)).resolve() if rel.parts else dest.resolve()
    if t != dest.resolve() and dest.resolve() not in t.parents:
        raise ArchiveError(f"archive member {str(rel)!r} resolves outside the extraction folder")
    return t


def extract(archive: str, dest: str, max_bytes: int = MAX_BYTES, max_files: int = MAX_FILES, max_ratio: float = MAX_RATIO) -> Path:
    """Extracts `archive` into the new folder `dest` (removed again on any refusal) and returns it."""
    kind = kind_of(archive)
    if kind is None:
        raise ArchiveError(f"{archive}: not a tar or zip archive")
    d = Path(dest)
    d.mkdir(parents=True, exist_ok=False)
    budget = _Budget(max_bytes, max_files)
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as z:
                members = z.infolist()
                # the headers first, so a bomb is refused before a byte of it is written (zipfile
                # never yields more than a member's declared size: a header cannot understate it)
                declared = 0
                for info in members:
                    declared += info.file_size
                    if declared > max_bytes:
                        raise budget.too_big(info.filename)
                    if info.file_size > max(_RATIO_FREE, max_ratio * info.compress_size):
                        raise ArchiveError(f"archive member {info.filename!r}: {info.compress_size} bytes that expand to {info.file_size} "
                                           f"(more than {max_ratio:g} times; limit TURNLENS_IMPORT_MAX_RATIO): refused as a zip bomb")
                for info in members:
                    rel = _safe_name(info.filename)
                    mode = info.external_attr >> 16
                    if stat.S_ISLNK(mode):
                        raise ArchiveError(f"archive member {info.filename!r}: links are refused")
                    budget.file(info.filename)
                    t = _target(d, rel)
                    if info.is_dir():
                        t.mkdir(parents=True, exist_ok=True)
                        continue
                    t.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(info) as src:
                        budget.copy(src, t, info.filename)
        else:
            with tarfile.open(archive, "r:*") as tf:
                for m in tf:
                    rel = _safe_name(m.name)
                    if m.issym() or m.islnk():
                        raise ArchiveError(f"archive member {m.name!r}: links are refused (it points to {m.linkname!r})")
                    if not (m.isfile() or m.isdir()):
                        raise ArchiveError(f"archive member {m.name!r}: only files and folders are allowed (a device, FIFO or other special file)")
                    budget.file(m.name)
                    t = _target(d, rel)
                    if m.isdir():
                        t.mkdir(parents=True, exist_ok=True)
                        continue
                    t.parent.mkdir(parents=True, exist_ok=True)
                    src = tf.extractfile(m)
                    if src is None:
                        raise ArchiveError(f"archive member {m.name!r}: cannot be read")
                    with src:
                        budget.copy(src, t, m.name)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        shutil.rmtree(d, ignore_errors=True)
        if isinstance(e, OSError) and e.errno in DISK_FULL:
            raise
        if isinstance(e, FileExistsError):  # a member named twice
            raise ArchiveError(f"archive names a file twice: {e.filename}") from None
        raise ArchiveError(f"{Path(archive).name}: a damaged or unreadable archive ({type(e).__name__}: {e})") from None
    except ArchiveError:
        shutil.rmtree(d, ignore_errors=True)
        raise
    return d


def content_root(d: Path) -> Path:
    """The folder to import: an archive of one top folder (`mlruns/`, `logs/`) imports that folder."""
    entries = [e for e in d.iterdir() if not e.name.startswith(".") and e.name != "__MACOSX"]
    while len(entries) == 1 and entries[0].is_dir():
        d = entries[0]
        entries = [e for e in d.iterdir() if not e.name.startswith(".") and e.name != "__MACOSX"]
    return d
