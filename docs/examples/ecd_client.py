#!/usr/bin/python3
"""ecd_client: an example Python client of ecd's gRPC API (ecd.v1), as a library and a CLI.

It shows how a program talks to ecd without ecctl: encode a file (a client stream of chunks
whose first message carries the header with the stripe shape), read an object back (a server
stream; the first message carries the object's version and size, every message the blocks that
had to be reconstructed), update a byte range (a client stream, optionally growing the object),
stat an object (version, size, health), recover an object (a server stream of progress) and
watch proactive rebuild jobs (polling Rebuilds.List / Rebuilds.Get until they finish).

The Python stubs are generated from proto/ecd/v1/ecd.proto with protoc and Debian's
grpc_python_plugin (python3-grpcio ships no grpc_tools):

    protoc --python_out=DIR --grpc_out=DIR \
        --plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin -I proto proto/ecd/v1/ecd.proto

Pass that DIR with --stubs (or put it on PYTHONPATH). Without either, the client generates the
stubs into a temporary directory from the proto of the repository it sits in, when protoc and
grpc_python_plugin are installed. See docs/examples/README.md.

Errors are one line on stderr, "ecd_client: <what>: <CODE>: <message>", and a non-zero exit:
1 for an error from ecd, 2 for a usage error, 3 for a local file or stub problem, 4 when a
watched rebuild job failed (141, silently, when stdout is a pipe closed early).

Library use (after the stubs are importable):

    from ecd_client import EcdClient
    with EcdClient("127.0.0.1:7400") as c:
        info = c.encode("obj", open("file.bin", "rb"), data_blocks=4, parity_blocks=2)
        result = c.read("obj", open("out.bin", "wb"))
        print(result.version, result.reconstructed_blocks)
"""

import argparse
import atexit
import collections
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

try:
    import grpc
except ImportError:  # A Python without grpcio, e.g. a pyenv or virtualenv interpreter.
    sys.stderr.write(
        "ecd_client: the grpc module is missing; run with Debian's /usr/bin/python3 "
        "(apt-get install python3-grpcio python3-protobuf)\n")
    sys.exit(3)

PROG = "ecd_client"
DEFAULT_ADDR = "127.0.0.1:7400"
# ecd accepts messages of up to 16 MiB; 1 MiB chunks keep memory low and streams responsive.
DEFAULT_CHUNK = 1 << 20
MAX_CHUNK = 8 << 20
# ecd sends read chunks of up to 1 MiB; allow more in case that ever grows.
MAX_RECEIVE = 64 << 20

EXIT_ECD = 1
EXIT_USAGE = 2
EXIT_LOCAL = 3
EXIT_JOB_FAILED = 4

# Set by load_stubs(): the generated modules ecd.v1.ecd_pb2 and ecd.v1.ecd_pb2_grpc.
pb = None
pb_grpc = None


class StubError(Exception):
    """The generated Python stubs cannot be found or generated."""


class LocalError(Exception):
    """A local problem (a file, the stream) detected by the client, not by ecd."""


class UsageError(Exception):
    """Arguments that argparse accepts but that do not make a request."""


def _generate_stubs(proto_root):
    """Runs protoc on proto_root/ecd/v1/ecd.proto into a temporary directory (removed at exit)."""
    protoc = shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin") or "/usr/bin/grpc_python_plugin"
    if protoc is None or not os.access(plugin, os.X_OK):
        raise StubError("protoc or grpc_python_plugin is not installed "
                        "(apt-get install protobuf-compiler protobuf-compiler-grpc)")
    out = tempfile.mkdtemp(prefix="ecd-stubs-")
    atexit.register(shutil.rmtree, out, True)
    cmd = [protoc, f"--python_out={out}", f"--grpc_out={out}",
           f"--plugin=protoc-gen-grpc={plugin}", f"-I{proto_root}",
           str(Path(proto_root) / "ecd" / "v1" / "ecd.proto")]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise StubError(f"protoc failed: {run.stderr.strip()}")
    return out


def load_stubs(stubs_dir=None):
    """Imports the generated ecd.v1 modules: from stubs_dir, else from sys.path (PYTHONPATH),
    else generated from the repository's proto directory."""
    global pb, pb_grpc
    if stubs_dir is not None:
        if not (Path(stubs_dir) / "ecd" / "v1" / "ecd_pb2.py").is_file():
            raise StubError(f"{stubs_dir} has no ecd/v1/ecd_pb2.py; generate the stubs with "
                            "protoc (docs/examples/README.md)")
        sys.path.insert(0, str(stubs_dir))
    try:
        from ecd.v1 import ecd_pb2, ecd_pb2_grpc
    except ImportError:
        if stubs_dir is not None:
            raise
        proto_root = Path(__file__).resolve().parent.parent.parent / "proto"
        if not (proto_root / "ecd" / "v1" / "ecd.proto").is_file():
            raise StubError("the ecd.v1 stubs are not importable: pass --stubs DIR or set "
                            "PYTHONPATH (docs/examples/README.md)") from None
        sys.path.insert(0, _generate_stubs(proto_root))
        from ecd.v1 import ecd_pb2, ecd_pb2_grpc
    pb, pb_grpc = ecd_pb2, ecd_pb2_grpc


# --------------------------------------------------------------------------------------------
# Sizes


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}


def parse_size(text):
    """"65536", "64K", "64KiB", "1M", "2G" -> bytes (binary units)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 4096, 64K, 1M)")
    return int(m.group(1)) << _UNITS[m.group(2).upper()]


def format_size(n):
    """Bytes as a short human string: 512 B, 64 KiB, 4.77 MiB."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.2f} {unit}"
    return f"{n} B"


# --------------------------------------------------------------------------------------------
# The library


@dataclass
class ReadResult:
    """What a Read stream delivered."""
    bytes_read: int
    object_size: int
    version: int               # The object version the bytes come from (one version, whole).
    reconstructed_blocks: int  # Blocks rebuilt from parity to serve the read (degraded read).
    object_id: int = 0         # The object's id: with version, names the bytes exactly.


def _chunks(stream, chunk_size):
    """Yields chunk_size pieces of a binary file object until EOF."""
    while True:
        piece = stream.read(chunk_size)
        if not piece:
            return
        yield piece


class _Requests:
    """A request iterator for a client stream: header message first (with the first chunk),
    then data-only messages. A local read error is kept so that the caller can report it
    instead of the CANCELLED/UNKNOWN status grpc turns it into; raising it also cancels the
    call, so ecd stores nothing (closing the stream normally would commit a short object)."""

    def __init__(self, make, header, data):
        self._make, self._header, self._data = make, header, data
        self.error = None

    def __iter__(self):
        try:
            first = next(self._data, b"")
            yield self._make(header=self._header, data=first)
            for piece in self._data:
                yield self._make(data=piece)
        except OSError as e:
            self.error = e
            raise


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds `authorization: Bearer TOKEN` to every call (ecd with --tokens-file,
    docs/security.md)."""

    def __init__(self, token):
        self.metadata = ("authorization", f"Bearer {token}")

    def _with_token(self, details):
        metadata = list(details.metadata or []) + [self.metadata]
        return details._replace(metadata=metadata) if hasattr(details, "_replace") else \
            _CallDetails(details.method, details.timeout, metadata, details.credentials,
                         getattr(details, "wait_for_ready", None),
                         getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._with_token(details), requests)


class _CallDetails(collections.namedtuple(
        "_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready",
                         "compression")), grpc.ClientCallDetails):
    pass


class EcdClient:
    """A thin, typed wrapper of the ecd.v1 stubs. Every method raises grpc.RpcError when ecd
    answers with an error status (see docs/errors.md for the codes). `token`: the bearer token
    for an ecd with --tokens-file (None: none)."""

    def __init__(self, addr=DEFAULT_ADDR, timeout=None, token=None):
        if pb is None:
            load_stubs()
        self.timeout = timeout  # Seconds per call; None: no deadline.
        self.channel = grpc.insecure_channel(
            addr, options=[("grpc.max_receive_message_length", MAX_RECEIVE)])
        if token:
            self.channel = grpc.intercept_channel(self.channel, _BearerToken(token))
        self.objects = pb_grpc.ObjectsStub(self.channel)
        self.devices = pb_grpc.DevicesStub(self.channel)
        self.rebuilds = pb_grpc.RebuildsStub(self.channel)

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def encode(self, name, stream, data_blocks=0, parity_blocks=0, block_size=0,
               matrix="cauchy", chunk_size=DEFAULT_CHUNK):
        """Encodes the bytes of a binary file object as object `name`; 0 picks ecd's default
        M, K or block size. Returns the committed ObjectInfo (version 1)."""
        header = pb.EncodeHeader(
            name=name, data_blocks=data_blocks, parity_blocks=parity_blocks,
            block_size=block_size, matrix=_matrix_value(matrix))
        requests = _Requests(pb.EncodeRequest, header, _chunks(stream, chunk_size))
        try:
            return self.objects.Encode(iter(requests), timeout=self.timeout).object
        except grpc.RpcError:
            if requests.error is not None:
                raise requests.error from None
            raise

    def read(self, name, out, offset=0, length=0):
        """Streams [offset, offset + length) of `name` (length 0: to the end) into the binary
        file object `out`. Returns a ReadResult."""
        result = ReadResult(0, 0, 0, 0)
        request = pb.ReadRequest(name=name, offset=offset, length=length)
        for i, chunk in enumerate(self.objects.Read(request, timeout=self.timeout)):
            if i == 0:  # Size and version come on the first message only.
                result.object_size = chunk.object_size
                result.version = chunk.object_version
                result.object_id = chunk.object_id
            result.reconstructed_blocks += chunk.reconstructed_blocks
            out.write(chunk.data)
            result.bytes_read += len(chunk.data)
        expected = max(0, result.object_size - offset)
        if length:
            expected = min(expected, length)
        if result.bytes_read != expected:  # ecd ends a failed stream with a status instead.
            raise LocalError(f"the read stream ended after {result.bytes_read} of "
                             f"{expected} bytes")
        return result

    def update(self, name, offset, stream, append=False, chunk_size=DEFAULT_CHUNK):
        """Overwrites [offset, offset + n) of `name` with the n bytes of a binary file object;
        with append the bytes may run past the end and grow it. Returns the UpdateResponse (the
        new version, bytes written, stripes updated and appended)."""
        header = pb.UpdateHeader(name=name, offset=offset, append=append)
        requests = _Requests(pb.UpdateRequest, header, _chunks(stream, chunk_size))
        try:
            return self.objects.Update(iter(requests), timeout=self.timeout)
        except grpc.RpcError:
            if requests.error is not None:
                raise requests.error from None
            raise

    def stat(self, name, blocks=False, verify=False):
        """The ObjectInfo of `name` with per-stripe health (and every block with blocks=True;
        verify=True reads every block and checks its CRC32C)."""
        request = pb.StatRequest(name=name, blocks=blocks, verify=verify)
        return self.objects.Stat(request, timeout=self.timeout).object

    def list(self):
        return list(self.objects.List(pb.ListRequest(), timeout=self.timeout).objects)

    def delete(self, name):
        """Deletes `name`; returns the bytes freed on the devices."""
        return self.objects.Delete(pb.DeleteRequest(name=name), timeout=self.timeout).freed_bytes

    def recover(self, name):
        """Rebuilds every lost or corrupt block of `name` elsewhere. Yields RecoverProgress
        messages; the last one has done=True."""
        return self.objects.Recover(pb.RecoverRequest(name=name), timeout=self.timeout)

    def rebuild_jobs(self):
        """Every rebuild job ecd knows: running first, then queued, then finished ones."""
        return list(self.rebuilds.List(pb.ListRebuildsRequest(), timeout=self.timeout).jobs)

    def rebuild_job(self, job_id):
        return self.rebuilds.Get(pb.GetRebuildRequest(id=job_id), timeout=self.timeout)

    def watch_rebuilds(self, ids=None, interval=0.5, on_change=None):
        """Polls rebuild jobs until every watched one is done or failed. Watches the jobs in
        `ids`, or else every job that is queued or running (including ones queued while
        watching). Calls on_change(job) whenever a job's state or counters change. Returns the
        watched jobs as last seen, by id."""
        seen = {}
        while True:
            if ids:
                jobs = [self.rebuild_job(i) for i in ids]
            else:
                jobs = [j for j in self.rebuild_jobs()
                        if j.state in ("queued", "running") or j.id in seen]
            for job in jobs:
                if on_change is not None and seen.get(job.id) != job:
                    on_change(job)
                seen[job.id] = job
            if all(j.state in ("done", "failed") for j in jobs):
                return seen
            time.sleep(interval)


def _matrix_value(name):
    values = {"cauchy": pb.MATRIX_TYPE_CAUCHY, "vandermonde": pb.MATRIX_TYPE_VANDERMONDE}
    try:
        return values[name]
    except KeyError:
        raise UsageError(f"matrix {name!r} is not cauchy or vandermonde") from None


# --------------------------------------------------------------------------------------------
# The CLI


def _to_dict(message):
    from google.protobuf import json_format
    # Proto3 JSON: 64-bit integers are strings; defaults are shown so scripts find every field.
    # protobuf 26 renamed the option that shows them (Debian 12 ships 3.21).
    try:
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         including_default_value_fields=True)
    except TypeError:
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)


def _emit(args, text, document):
    """Prints a human line, or with --json one JSON document (one line)."""
    if args.json:
        print(json.dumps(document, sort_keys=True), flush=True)
    else:
        print(text, flush=True)


def _matrix_name(value):
    return "vandermonde" if value == pb.MATRIX_TYPE_VANDERMONDE else "cauchy"


def _shape(o):
    return (f"{o.data_blocks}+{o.parity_blocks} {_matrix_name(o.matrix)}, "
            f"{format_size(o.block_size)} blocks, {o.stripe_count} stripes")


def _health(o):
    if o.lost_stripes:
        return f"LOST: {o.lost_stripes} stripes cannot be read ({o.degraded_stripes} degraded)"
    if o.degraded_stripes:
        return f"degraded: {o.degraded_stripes} stripes miss blocks (readable; run recover)"
    return "healthy"


def _open_input(path):
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as e:
        raise LocalError(f"cannot open {path}: {e.strerror}") from None


def cmd_encode(client, args):
    name = args.name or os.path.basename(args.file)
    with _open_input(args.file) as f:
        o = client.encode(name, f, args.data, args.parity, args.block_size, args.matrix,
                          args.chunk_size)
    _emit(args, f"encoded {o.name}: {o.size} bytes, {_shape(o)}, version {o.version}",
          {"object": _to_dict(o)})


def cmd_read(client, args):
    if args.output == "-":
        result = client.read(args.name, sys.stdout.buffer, args.offset, args.length)
        sys.stdout.buffer.flush()
        # The bytes went to stdout: the summary goes to stderr.
        print(f"read {args.name}: {result.bytes_read} bytes, version {result.version}, "
              f"{result.reconstructed_blocks} blocks reconstructed", file=sys.stderr)
        return
    # Into a temporary file next to the output, renamed when the stream ended well: a failed
    # read leaves no partial file behind.
    directory = os.path.dirname(os.path.abspath(args.output))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ecd-read-", dir=directory)
    except OSError as e:
        raise LocalError(f"cannot write to {directory}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            result = client.read(args.name, out, args.offset, args.length)
        os.replace(tmp, args.output)
    except BaseException:
        os.unlink(tmp)
        raise
    _emit(args,
          f"read {args.name}: {result.bytes_read} bytes to {args.output}, version "
          f"{result.version}, {result.reconstructed_blocks} blocks reconstructed",
          {"name": args.name, "output": args.output, "bytes": result.bytes_read,
           "object_size": result.object_size, "version": result.version,
           "object_id": result.object_id, "reconstructed_blocks": result.reconstructed_blocks})


def cmd_update(client, args):
    if (args.file is None) == (args.data_hex is None):
        raise UsageError("give exactly one of --file and --data-hex")
    if args.data_hex is not None:
        try:
            data = bytes.fromhex(args.data_hex)
        except ValueError:
            raise UsageError(f"--data-hex {args.data_hex!r} is not pairs of hex digits") from None
        source = io.BytesIO(data)
    else:
        source = _open_input(args.file)
    with source:
        r = client.update(args.name, args.offset, source, args.append, args.chunk_size)
    o = r.object
    _emit(args,
          f"updated {o.name}: {r.bytes_written} bytes at offset {args.offset}, version "
          f"{o.version}, size {o.size}, {r.stripes_updated} stripes updated, "
          f"{r.stripes_appended} appended",
          _to_dict(r))


def cmd_stat(client, args):
    o = client.stat(args.name, args.blocks, args.verify)
    if args.json:
        _emit(args, None, {"object": _to_dict(o)})
        return
    created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(o.created_unix_ms / 1000))
    print(f"{o.name}\n"
          f"  version  {o.version}\n"
          f"  size     {o.size} bytes ({format_size(o.size)})\n"
          f"  shape    {_shape(o)}\n"
          f"  created  {created}\n"
          f"  health   {_health(o)}")
    width = o.data_blocks + o.parity_blocks
    for s in o.stripes:
        if not args.blocks and s.healthy_blocks == width:
            continue  # Without --blocks only the stripes that miss blocks are listed.
        print(f"  stripe {s.index}: {s.healthy_blocks}/{width} healthy")
        for b in s.blocks:
            kind = "data" if b.index < o.data_blocks else "parity"
            state = "ok" if b.healthy else "BAD"
            print(f"    block {b.index:3} {kind:6} device {b.device} lba {b.lba}+{b.lba_count} "
                  f"crc32c {b.crc32c:08x} {state}")


def cmd_ls(client, args):
    objects = client.list()
    if args.json:
        _emit(args, None, {"objects": [_to_dict(o) for o in objects]})
        return
    for o in objects:
        print(f"{o.name}\t{o.size}\tv{o.version}\t{o.data_blocks}+{o.parity_blocks}\t{_health(o)}")


def cmd_rm(client, args):
    freed = client.delete(args.name)
    _emit(args, f"deleted {args.name}: {freed} bytes freed", {"freed_bytes": freed})


def cmd_recover(client, args):
    last = None
    for p in client.recover(args.name):
        last = p
        _emit(args,
              f"recover {args.name}: {p.stripes_done}/{p.stripes_total} stripes, "
              f"{p.blocks_checked} blocks checked, {p.blocks_rebuilt} rebuilt "
              f"({format_size(p.bytes_rebuilt)})" + (", done" if p.done else ""),
              _to_dict(p))
    if last is None or not last.done:  # ecd ends a failed recover with a status instead.
        raise LocalError("the recover stream ended without its final (done) message")


def _job_line(j):
    where = f"object {j.object}" if j.kind == "repair-object" else f"device {j.device}"
    if j.kind == "media-range":
        where += f" LBA {j.first_lba}+{j.lba_count}"
    line = (f"job {j.id} {j.kind} {where}: {j.state}, objects {j.objects_done}/"
            f"{j.objects_total}, {j.blocks_checked} blocks checked, {j.blocks_moved} moved "
            f"({format_size(j.bytes_moved)})")
    if j.state in ("done", "failed") and j.started_unix_ms and j.finished_unix_ms:
        line += f" in {(j.finished_unix_ms - j.started_unix_ms) / 1000:.1f} s"
    if j.error:
        line += f"; error: {j.error}"
    return line


def cmd_rebuilds(client, args):
    if not args.watch:
        jobs = [client.rebuild_job(i) for i in args.id] if args.id else client.rebuild_jobs()
        if args.json:
            _emit(args, None, {"jobs": [_to_dict(j) for j in jobs]})
        else:
            for j in jobs:
                print(_job_line(j) + (f" ({j.reason})" if j.reason else ""))
        return
    jobs = client.watch_rebuilds(args.id, args.interval,
                                 lambda j: _emit(args, _job_line(j), _to_dict(j)))
    if not jobs and not args.json:
        print("no rebuild job is queued or running")
    failed = [j for j in jobs.values() if j.state == "failed"]
    if failed:
        raise JobFailed(f"rebuild job {failed[0].id} failed: {failed[0].error}")


class JobFailed(Exception):
    """A watched rebuild job ended in state failed."""


def build_parser():
    p = argparse.ArgumentParser(
        prog=PROG, description="Example Python client of the ecd gRPC API (ecd.v1).")
    p.add_argument("--addr", default=DEFAULT_ADDR,
                   help=f"ecd's address: host:port or unix:/path (default {DEFAULT_ADDR})")
    p.add_argument("--stubs", metavar="DIR",
                   help="directory holding the generated ecd/v1/ecd_pb2*.py (default: "
                        "PYTHONPATH, else generated with protoc from the repository's proto)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="deadline of each call (default: none)")
    p.add_argument("--token", default=os.environ.get("ECD_TOKEN"),
                   help="bearer token for an ecd with --tokens-file (default: $ECD_TOKEN)")
    p.add_argument("--json", action="store_true",
                   help="print JSON (proto3 mapping: 64-bit integers are strings); streams "
                        "print one JSON document per line, the last one final")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("encode", help="store a file as an erasure-coded object")
    s.add_argument("file", help="the file to encode, - for stdin")
    s.add_argument("--name", help="the object's name (default: the file's base name)")
    s.add_argument("--data", type=int, default=0, metavar="M",
                   help="data blocks per stripe, 1..128 (default: ecd's, 4)")
    s.add_argument("--parity", type=int, default=0, metavar="K",
                   help="parity blocks per stripe, 1..32 (default: ecd's, 2)")
    s.add_argument("--block-size", type=parse_size, default=0, metavar="SIZE",
                   help="bytes per block, a multiple of 64 up to 128M (default: ecd's, 1M)")
    s.add_argument("--matrix", choices=("cauchy", "vandermonde"), default="cauchy")
    s.add_argument("--chunk-size", type=parse_size, default=DEFAULT_CHUNK, metavar="SIZE",
                   help=f"bytes per stream message (default 1M, at most {format_size(MAX_CHUNK)})")
    s.set_defaults(run=cmd_encode)

    s = sub.add_parser("read", help="read an object (or a range of it) into a file")
    s.add_argument("name")
    s.add_argument("-o", "--output", required=True, help="the file to write, - for stdout")
    s.add_argument("--offset", type=parse_size, default=0, help="first byte (default 0)")
    s.add_argument("--length", type=parse_size, default=0,
                   help="bytes to read (default 0: to the end)")
    s.set_defaults(run=cmd_read)

    s = sub.add_parser("update", help="overwrite a byte range of an object (a new version)")
    s.add_argument("name")
    s.add_argument("--offset", type=parse_size, required=True,
                   help="where the bytes go; at most the object's size")
    s.add_argument("--file", help="the new bytes, - for stdin")
    s.add_argument("--data-hex", metavar="HEX", help="the new bytes as hex digits, e.g. a5ff")
    s.add_argument("--append", action="store_true",
                   help="let the bytes run past the end and grow the object")
    s.add_argument("--chunk-size", type=parse_size, default=DEFAULT_CHUNK, metavar="SIZE")
    s.set_defaults(run=cmd_update)

    s = sub.add_parser("stat", help="an object's version, size, shape and health")
    s.add_argument("name")
    s.add_argument("--blocks", action="store_true", help="list every block of every stripe")
    s.add_argument("--verify", action="store_true",
                   help="read every block and check its CRC32C (slow)")
    s.set_defaults(run=cmd_stat)

    s = sub.add_parser("ls", help="list the objects")
    s.set_defaults(run=cmd_ls)

    s = sub.add_parser("rm", help="delete an object")
    s.add_argument("name")
    s.set_defaults(run=cmd_rm)

    s = sub.add_parser("recover", help="rebuild an object's lost or corrupt blocks, with progress")
    s.add_argument("name")
    s.set_defaults(run=cmd_recover)

    s = sub.add_parser("rebuilds", help="list rebuild jobs, or watch them until they finish")
    s.add_argument("--id", type=int, action="append", default=[],
                   help="only this job (repeatable)")
    s.add_argument("--watch", action="store_true",
                   help="print progress until the jobs (--id, else every queued or running "
                        "one) are done or failed; exit 4 if one failed")
    s.add_argument("--interval", type=float, default=0.5, metavar="SECONDS",
                   help="polling interval of --watch (default 0.5)")
    s.set_defaults(run=cmd_rebuilds)
    return p


def _fail(what, message, code):
    sys.stderr.write(f"{PROG}: {what}: {message}\n")
    return code


def main(argv=None):
    args = build_parser().parse_args(argv)
    what = f"{args.command} {getattr(args, 'name', None) or getattr(args, 'file', '')}".strip()
    if getattr(args, "chunk_size", DEFAULT_CHUNK) not in range(1, MAX_CHUNK + 1):
        return _fail(what, f"--chunk-size must be 1..{MAX_CHUNK} bytes", EXIT_USAGE)
    try:
        load_stubs(args.stubs)
    except (StubError, ImportError) as e:
        return _fail("stubs", str(e), EXIT_LOCAL)
    try:
        with EcdClient(args.addr, args.timeout, args.token) as client:
            args.run(client, args)
    except grpc.RpcError as e:
        message = e.details() or ""
        if e.code() == grpc.StatusCode.UNAVAILABLE and "connect" in message:
            message += f"; is ecd running at {args.addr}?"
        return _fail(what, f"{e.code().name}: {message}", EXIT_ECD)
    except UsageError as e:
        return _fail(what, str(e), EXIT_USAGE)
    except LocalError as e:
        return _fail(what, str(e), EXIT_LOCAL)
    except BrokenPipeError:
        # stdout was closed early (e.g. piped into head): not an error worth a message. Point
        # stdout at /dev/null so that the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:
        return _fail(what, f"{e.filename or 'I/O'}: {e.strerror or e}", EXIT_LOCAL)
    except JobFailed as e:
        return _fail(what, str(e), EXIT_JOB_FAILED)
    except KeyboardInterrupt:
        return _fail(what, "interrupted", 130)
    return 0


if __name__ == "__main__":
    sys.exit(main())
