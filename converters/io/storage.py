"""All file I/O, through `tf.io.gfile` so `gs://`, `ram://` and local paths all work.

Writes are atomic: each file goes to a temporary sibling first and is renamed into place only
when every file of the transaction is written, so an interrupted run never leaves a half-written model.
Temporaries carry a graphfreeze marker, host, pid and process start time (`temp_name`); a run
killed outright (SIGKILL, power cut) leaves them behind, and the next run on the same output
removes those whose process is gone (`sweep`; other hosts' once a day old). Directories are
replaced by renaming the old one aside first, so concurrent `--force` runs leave one whole tree.
"""

from __future__ import annotations

import errno
import os
import tempfile

from graphfreeze.errors import GraphFreezeError, InputError, OutputError, first_line
from graphfreeze.io.paths import basename, dirname, expand, is_remote, join  # noqa: F401 -- re-exported
from graphfreeze.io.paths import gfile as _gfile
from graphfreeze.io.remote import reached, upload
from graphfreeze.io.temporaries import remove, signals_deferred, sweep, temp_name
from graphfreeze.io.trees import tree_digest, tree_files  # noqa: F401 -- re-exported


def glob(prefix: str, pattern: str) -> list[str]:
    """Sorted files named `prefix` + `pattern` (a literal prefix, a glob pattern), spelled like the
    prefix: TensorFlow's glob answers `model.ckpt*` with `./model.ckpt...`, so a bare relative
    prefix would not match its own files."""
    if is_remote(prefix):
        return sorted(reached(prefix, lambda: _gfile().glob(prefix + pattern)))
    import glob as _glob

    name = os.path.basename(prefix)  # (glob spells the folder its own way: `a//b` as `a/b`)
    return sorted(prefix + os.path.basename(found)[len(name):]
                  for found in _glob.glob(_glob.escape(prefix) + pattern))


def exists(path: str) -> bool:
    if not is_remote(path):
        return os.path.exists(path)
    return reached(path, lambda: _gfile().exists(path))


def isdir(path: str) -> bool:
    if not is_remote(path):
        return os.path.isdir(path)
    return reached(path, lambda: _gfile().isdir(path))


def listdir(path: str) -> list[str]:
    return sorted(_gfile().listdir(path) if is_remote(path) else os.listdir(path))


def size(path: str) -> int:
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def read_bytes(path: str) -> bytes:
    """Read a whole file; a missing or unreadable file is an InputError naming it."""
    if not exists(path):
        raise InputError(f"{path}: file not found; check the path")
    try:
        if not is_remote(path):
            with open(path, "rb") as f:
                return f.read()
        with _gfile().GFile(path, "rb") as f:
            return f.read()
    except Exception as err:  # tf.errors.* for remote filesystems
        raise InputError(f"{path}: cannot read ({first_line(err)})") from err


def read_proto(path: str, message, split: dict, hold=None):
    """Parse the binary proto file `path` into `message` (DecodeError if it is not one): a local
    file a few MB at a time (`proto.stream`: never the whole bytes and their parse at once;
    `hold`: its hook for big top-level fields)."""
    import stat

    if is_remote(path) or not exists(path) or not stat.S_ISREG(os.stat(path).st_mode):
        message.ParseFromString(read_bytes(path))  # (a pipe has no size to read up to)
        return message
    from graphfreeze.proto.stream import merge_file

    try:
        return merge_file(message, path, split, hold=hold)
    except OSError as err:
        raise InputError(f"{path}: cannot read ({first_line(err)})") from err


def check_writable(paths: list[str], force: bool, flag: str = "-o") -> None:
    """Refuse before any work starts: an existing output without force, or an unusable parent
    (`flag`: the option that named the paths, which the fix changes)."""
    for path in paths:
        try:
            there = exists(path)
        except InputError as err:  # a bucket out of reach
            raise OutputError(f"{err}, or choose another {flag}") from err
        if there and not force:
            raise OutputError(f"{path}: already exists; pass --force to overwrite it")
        parent = dirname(path) or "."
        if is_remote(path):
            continue  # object stores have no real directories; nothing to check
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise OutputError(f"{path}: parent {parent} is a file, not a directory; choose "
                              f"another {flag}")
        probe = parent
        while not os.path.exists(probe):
            probe = os.path.dirname(probe) or "."
        if not os.path.isdir(probe):
            raise OutputError(f"{path}: {probe} is a file, not a directory; choose another {flag}")
        if not os.access(probe, os.W_OK | os.X_OK):  # EROFS even for root
            why = "is on a read-only file system" if _read_only(probe) else "is not writable"
            raise OutputError(f"{path}: directory {probe} {why}; choose another {flag}")


def _read_only(folder: str) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


_HINTS = {errno.ENOSPC: "no space left on device; free some space or",
          errno.EDQUOT: "disk quota exceeded; free some space or",
          errno.EROFS: "read-only file system;",
          errno.EACCES: "permission denied;",
          errno.EPERM: "permission denied;"}


def write_error(path: str, err: BaseException, flag: str = "-o") -> OutputError:
    """The one-line OutputError for a failed write of `path` (disk full, read-only, ...);
    `flag`: the option that named it."""
    code = getattr(err, "errno", None)
    if code not in _HINTS:  # TensorFlow's errors carry the strerror text only
        text = first_line(err)
        code = next((c for c in _HINTS if os.strerror(c) in text), None)
    why = _HINTS.get(code) or f"cannot write ({first_line(err)});"
    return OutputError(f"{path}: {why} choose another {flag}")


class Transaction:
    """Files written to temporary siblings as they are made, renamed into place together.

        with Transaction(force) as txn:
            txn.put(path, data)            # a file, now in a temporary sibling
            tmp_a, tmp_b = txn.workdir([a, b])  # or: where to write a and b (files or
            ...                                   #     dirs), siblings in one temporary dir
            txn.commit()                     # all renames; on an exception, temporaries removed

    Temporaries are named by `temp_name`; each new output first sweeps away those of killed runs.
    A write that fails for want of space or permission (here or in a stage writing into a
    workdir) leaves as one OutputError naming the output.
    """

    def __init__(self, force: bool, on_commit=None):
        self.force = force
        self.on_commit = on_commit  # called as the renames start; may raise to write nothing
        self.temps: dict[str, str] = {}  # final path -> temporary path
        self.dirs: list[str] = []  # temporary directories, removed at the end
        self.made: list[str] = []  # output folders we created, removed if the transaction fails
        self.flags: dict[str, str] = {}  # final path -> the option naming it, if not -o

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind, err, tb) -> None:
        owner = self._owner_of(err) if err is not None else None
        self.discard()
        if owner is not None:
            raise write_error(owner, err, self.flags.get(owner, "-o")) from err

    def _owner_of(self, err: BaseException) -> str | None:
        """The output a failed write belongs to: `err` is a write error (disk full, read-only,
        permission) naming one of our temporaries, or naming no file while the newest local
        temporary's disk is full or read-only (`f.write` errors carry no file name)."""
        if isinstance(err, GraphFreezeError) or not isinstance(err, Exception):
            return None
        text = f"{getattr(err, 'filename', '')} {getattr(err, 'message', '')} {err}"
        code = getattr(err, "errno", None)
        if code not in _HINTS:
            code = next((c for c in _HINTS if os.strerror(c) in text), None)
        if code is None:
            return None
        for path, tmp in self.temps.items():
            if tmp in text or dirname(tmp) in self.dirs and dirname(tmp) in text:
                return path
        local = [(path, tmp) for path, tmp in self.temps.items() if not is_remote(tmp)]
        if getattr(err, "filename", None) is None and local:
            path, tmp = local[-1]
            try:
                disk = os.statvfs(dirname(tmp) or ".")
            except OSError:
                return None
            full = disk.f_bavail * disk.f_frsize < (1 << 20)
            if code in (errno.ENOSPC, errno.EDQUOT) and full or \
                    code == errno.EROFS and disk.f_flag & os.ST_RDONLY:
                return path
        return None

    def put(self, path: str, data, flag: str = "-o") -> str:
        """Write `data` (bytes, or an iterable of byte chunks) to a temporary sibling of path;
        returns the sibling's path (where a runtime opens it until commit). `flag`: the option
        that named `path`, which errors tell to change."""
        check_writable([path], self.force, flag)
        if flag != "-o":
            self.flags[path] = flag
        sweep(path)
        if path in self.temps:  # written again (the golden set of a target with more rows)
            remove(self.temps[path])
        parent = dirname(path)
        tmp = join(parent or ".", temp_name(path))
        self.temps[path] = tmp
        try:
            if is_remote(path):
                with _gfile().GFile(tmp, "wb") as f:
                    for chunk in [data] if isinstance(data, bytes) else data:
                        f.write(bytes(chunk))  # (GFile takes no memoryview)
                return tmp
            self._makedirs(parent)
            with open(tmp, "wb") as f:
                for chunk in [data] if isinstance(data, bytes) else data:
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())  # the rename must not outrun the data (power cuts)
            return tmp
        except GraphFreezeError:
            raise
        except Exception as err:
            raise write_error(path, err, flag) from err

    def workdir(self, paths: list[str]) -> list[str]:
        """Where to write each of `paths` (files or directories): siblings in one local temporary
        directory, moved into place at commit -- beside paths[0] for local paths (a rename), in
        the system temp dir for remote ones (an upload). Paths must share one parent."""
        check_writable(paths, self.force)
        for path in paths:
            sweep(path)
        name = temp_name(paths[0])
        tmp = os.path.join(tempfile.gettempdir(), name) if is_remote(paths[0]) else \
            join(dirname(paths[0]) or ".", name)
        try:
            self._makedirs(dirname(tmp))
            os.mkdir(tmp)
        except Exception as err:
            raise write_error(paths[0], err) from err
        self.dirs.append(tmp)
        for path in paths:
            self.temps[path] = join(tmp, basename(path))
        return [self.temps[path] for path in paths]

    def commit(self) -> None:
        with signals_deferred():  # all renames or none: a signal waits until they are done
            if self.on_commit is not None:
                self.on_commit()
            try:
                for path, tmp in list(self.temps.items()):
                    if not (os.path.lexists(tmp) if not is_remote(tmp) else _gfile().exists(tmp)):
                        raise OutputError(f"{path}: was never written; report this as a bug")
                    if is_remote(path) and not is_remote(tmp):
                        upload(tmp, path)
                    elif is_remote(path):
                        _gfile().rename(tmp, path, overwrite=True)
                    elif os.path.isdir(tmp):
                        _replace_dir(tmp, path)
                    else:
                        os.replace(tmp, path)  # atomic, also over a file another run put there
                    del self.temps[path]
            except GraphFreezeError:
                raise
            except Exception as err:
                raise write_error(path, err, self.flags.get(path, "-o")) from err
            self.made.clear()
            self.discard()

    def discard(self) -> None:
        with signals_deferred():  # a second Ctrl-C must not leave temporaries behind
            for tmp in [*self.temps.values(), *self.dirs]:
                remove(tmp)
            for folder in reversed(self.made):
                try:
                    os.rmdir(folder)  # only if still empty
                except OSError:
                    pass
            self.temps.clear()
            self.dirs.clear()
            self.made.clear()

    def _makedirs(self, folder: str) -> None:
        """os.makedirs, remembering the folders made (local paths only)."""
        missing = []
        while folder and not os.path.isdir(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for made in reversed(missing):
            try:
                os.mkdir(made)
            except FileExistsError:  # another run made it meanwhile: not ours to remove
                continue
            self.made.append(made)


def _replace_dir(tmp: str, path: str) -> None:
    """Rename directory `tmp` to `path`, whatever is there (check_writable refused it unless
    --force): the old one is first renamed aside, then removed, so `path` is always one whole
    tree even when several runs replace it at once (the last rename wins)."""
    for _ in range(100):
        aside = join(dirname(path) or ".", temp_name(path))
        try:
            os.rename(path, aside)  # atomic; nothing there is fine
        except FileNotFoundError:
            pass
        else:
            remove(aside)
        try:
            os.rename(tmp, path)
            return
        except OSError as err:  # another run put its tree there in between: again
            if err.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                raise
    raise OutputError(f"{path}: replaced by other runs 100 times over; run one at a time")
