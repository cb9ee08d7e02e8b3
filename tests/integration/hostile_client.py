"""Hostile clients against an ecd started by hostile_clients_test.sh; checks that ecd survives.

Usage: hostile_client.py STUBS TCP_ADDR UNIX_SOCKET METRICS_ADDR ECD_LOG MODE [ARGS...]
(lock-waiters runs $ECTL too)

Modes (each expects the ecd the test script started for it):
  descriptors COUNT IDLE  COUNT idle TCP connections run ecd out of file descriptors; without
                          closing them, once ecd has closed them (--max-connection-idle IDLE
                          seconds) a fresh call succeeds and the listener's recovery is counted.
  unix-listener COUNT     COUNT idle TCP connections run ecd out of descriptors, then a
                          connection to the Unix socket (gRPC's own listener) kills that
                          listener; ecd restarts its gRPC server and serves on both again.
  tls-listener COUNT      (ecd with TLS: gRPC runs the TCP listener) COUNT idle TCP connections
                          kill gRPC's listener; ecd restarts its gRPC server on the same port.
  connection-limit COUNT  COUNT idle TCP connections against --max-connections: the extra ones
                          are closed at once, /readyz says why, the Unix socket still serves;
                          once they are closed a fresh TCP call succeeds.
  stalled IDLE            streams that send a header and nothing hold no stripe memory; 16
                          streams that send some data and stall, and a read that does not
                          consume, are cancelled after --stream-idle-timeout IDLE seconds and
                          give their memory back; another client's encode succeeds meanwhile; a
                          read waiting for memory gives up at its 0.2 s deadline.
  lock-waiters COUNT      COUNT calls waiting for an object's lock (held by an update that sent a
                          byte and then nothing) with a 0.2 s deadline end with DEADLINE_EXCEEDED
                          at once and leave ecd_inflight_requests at its idle value.
Prints one "ok:" line per check; exits 1 with a FAIL line on the first check that does not hold.
"""

import concurrent.futures
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
from ecd.v1 import ecd_pb2 as pb  # noqa: E402
from ecd.v1 import ecd_pb2_grpc as rpc  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prom_text  # noqa: E402

TCP, UNIX, METRICS, LOG, MODE = sys.argv[2:7]
ARGS = sys.argv[7:]
START = time.monotonic()


def fail(text):
    print("FAIL: %s (after %.1f s)" % (text, time.monotonic() - START), file=sys.stderr)
    sys.exit(1)


def ok(text):
    print("   ok: %s (%.1f s)" % (text, time.monotonic() - START))


def objects_stub(addr):
    channel = grpc.insecure_channel(addr, options=[("grpc.max_send_message_length", 64 << 20)])
    return rpc.ObjectsStub(channel), channel


def metric(series):
    """The value of the series 'name{label="v",...}' (labels in any order), or None."""
    page = urllib.request.urlopen("http://%s/metrics" % METRICS, timeout=10).read().decode()
    return prom_text.value(page, series)


def readyz():
    """(HTTP status, body) of /readyz."""
    try:
        with urllib.request.urlopen("http://%s/readyz" % METRICS, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_for(what, check, timeout):
    """Polls check() until it returns a true value, which it returns; fails after `timeout` s."""
    until = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > until:
            fail("%s: not within %g s" % (what, timeout))
        time.sleep(0.05)


def log_count(text):
    with open(LOG, errors="replace") as f:
        return f.read().count(text)


def raise_own_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def open_idle(addr, count, until_refused=False):
    """`count` TCP connections to addr that send nothing. With until_refused, stops early, with
    those it has, once the listener resets or refuses a connection (a server that restarts
    while they are being opened)."""
    host, port = addr.rsplit(":", 1)
    conns = []
    for _ in range(count):
        try:
            s = socket.create_connection((host, int(port)), timeout=5)
        except (ConnectionResetError, ConnectionRefusedError):
            if until_refused and conns:
                break
            raise
        conns.append(s)
    return conns


def closed_by_peer(s):
    """True once the peer has closed the connection (what it sent before is read and dropped)."""
    s.setblocking(False)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def list_devices(addr, timeout=5):
    channel = grpc.insecure_channel(addr)
    try:
        return rpc.DevicesStub(channel).List(pb.ListDevicesRequest(), timeout=timeout)
    finally:
        channel.close()


def fresh_call(addr, within):
    """A call on a new channel to addr succeeds within `within` seconds (retrying)."""
    until = time.monotonic() + within
    while True:
        try:
            return list_devices(addr)
        except grpc.RpcError as e:
            if time.monotonic() > until:
                fail("a fresh call to %s failed: %s: %s" % (addr, e.code().name, e.details()))
            time.sleep(0.2)


def encode_requests(name, data, stall=None, block=1 << 20):
    yield pb.EncodeRequest(header=pb.EncodeHeader(name=name, data_blocks=4, parity_blocks=2,
                                                  block_size=block))
    for at in range(0, len(data), 1 << 20):
        yield pb.EncodeRequest(data=data[at:at + (1 << 20)])
    if stall is not None:
        stall.wait()  # Sends nothing more until the test lets it go (or the call ends).


def descriptors(count, idle):
    raise_own_limit()
    before = metric('ecd_listener_recoveries_total{how="accept"}')
    conns = open_idle(TCP, count)
    ok("opened %d idle TCP connections" % count)
    wait_for("ecd reports running out of file descriptors",
             lambda: log_count("out of file descriptors") > 0, 10)
    ok("ecd ran out of file descriptors and says so")
    # The client never closes them: ecd does, after --max-connection-idle.
    closed = wait_for("ecd closes the idle connections",
                      lambda: sum(closed_by_peer(s) for s in conns) == count and count, idle + 10)
    ok("ecd closed all %d idle connections itself (--max-connection-idle %ss)" % (closed, idle))
    fresh_call(TCP, 10)
    ok("a fresh call on a new TCP connection succeeds")
    if metric('ecd_listener_recoveries_total{how="accept"}') < before + 1:
        fail("the listener's recovery was not counted")
    refused = metric('ecd_grpc_connections_refused_total{reason="descriptors"}')
    status, body = readyz()
    if status != 200:
        fail("/readyz says %d %r after the recovery" % (status, body))
    ok("recovery counted, %d connections closed for want of descriptors, /readyz 200" % refused)
    for s in conns:
        s.close()


def unix_listener(count):
    raise_own_limit()
    shortages = log_count("out of file descriptors")
    conns = open_idle(TCP, count)
    wait_for("ecd runs out of file descriptors",
             lambda: log_count("out of file descriptors") > shortages, 10)
    ok("%d idle TCP connections ran ecd out of file descriptors" % count)
    # gRPC's own accept loop (the Unix socket's) stops at the first EMFILE.
    probes = []
    deadline = time.monotonic() + 10
    while log_count("Failed accept4") == 0:
        if time.monotonic() > deadline:
            fail("gRPC's Unix listener never failed to accept")
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.connect(UNIX)
        probes.append(u)
        time.sleep(0.1)
    ok("gRPC's Unix-socket listener stopped: %r" % "Failed accept4")
    wait_for("ecd restarts its gRPC server",
             lambda: log_count("the gRPC server serves again") > 0, 20)
    ok("ecd restarted its gRPC server")
    for s in conns + probes:
        s.close()
    fresh_call("unix:" + UNIX, 10)
    fresh_call(TCP, 10)
    ok("fresh calls on the Unix socket and on TCP succeed")
    if metric('ecd_listener_recoveries_total{how="rebuild"}') < 1:
        fail("the server restart was not counted")
    status, body = readyz()
    if status != 200:
        fail("/readyz says %d %r after the restart" % (status, body))
    ok("the restart is counted and /readyz says 200")


def tls_listener(count):
    raise_own_limit()
    died, restarted = log_count("Failed accept4"), log_count("the gRPC server serves again")
    # The listener may die, and ecd restart its server, before all of them are open.
    conns = open_idle(TCP, count, until_refused=True)
    wait_for("gRPC's TCP listener stops", lambda: log_count("Failed accept4") > died, 10)
    ok("%d idle TCP connections stopped gRPC's TLS listener: %r" % (count, "Failed accept4"))
    wait_for("ecd restarts its gRPC server",
             lambda: log_count("the gRPC server serves again") > restarted, 20)
    ok("ecd restarted its gRPC server")
    for s in conns:
        s.close()
    if metric('ecd_listener_recoveries_total{how="rebuild"}') < 1:
        fail("the server restart was not counted")
    wait_for("/readyz says ready", lambda: readyz()[0] == 200, 10)
    ok("the restart is counted and /readyz says 200")


def connection_limit(count):
    raise_own_limit()
    conns = open_idle(TCP, count)
    limited = wait_for(
        "connections past the limit refused",
        lambda: (metric('ecd_grpc_connections_refused_total{reason="max-connections"}') or 0) > 0
        and metric("ecd_grpc_connections"), 10)
    refused = metric('ecd_grpc_connections_refused_total{reason="max-connections"}')
    if limited + refused < count or limited >= count:
        fail("%d connections open and %d refused of %d" % (limited, refused, count))
    ok("%d connections open, %d refused at --max-connections" % (limited, refused))
    closed = sum(closed_by_peer(s) for s in conns)
    if closed < refused:
        fail("only %d of the %d refused connections were closed by ecd" % (closed, refused))
    status, body = readyz()
    if status != 503 or "--max-connections" not in body:
        fail("/readyz at the limit says %d %r" % (status, body))
    ok("/readyz: %d %s" % (status, body.strip()))
    if metric("ecd_listener_accepting") != 0:
        fail("ecd_listener_accepting is not 0 at the limit")
    list_devices("unix:" + UNIX)
    ok("the Unix socket still serves")
    for s in conns:
        s.close()
    wait_for("/readyz says ready again", lambda: readyz()[0] == 200, 10)
    fresh_call(TCP, 10)
    ok("after the connections closed: /readyz 200 and a fresh TCP call succeeds")


def expect_rpc_error(call, code, parts, what, within=None):
    start = time.monotonic()
    try:
        call()
    except grpc.RpcError as e:
        took = time.monotonic() - start
        if e.code() != code:
            fail("%s: expected %s, got %s: %s" % (what, code.name, e.code().name, e.details()))
        for p in parts:
            if p not in (e.details() or ""):
                fail("%s: the message %r does not say %r" % (what, e.details(), p))
        if within is not None and took > within:
            fail("%s: took %.2f s, more than %g s" % (what, took, within))
        return e.details(), took
    fail("%s: expected %s, but the call succeeded" % (what, code.name))


def stalled(idle):
    objects, _ = objects_stub(TCP)
    budget = metric("ecd_memory_budget_bytes")
    stripe = 6 << 20  # 4+2 x 1 MiB
    # Streams that send only a header hold no stripe memory while they wait.
    release = threading.Event()
    headers_only = [objects.Encode.future(encode_requests("silent-%d" % i, b"", stall=release),
                                          timeout=120) for i in range(8)]
    wait_for("8 header-only encodes in flight", lambda: metric("ecd_inflight_requests") >= 8, 10)
    time.sleep(0.3)
    if metric("ecd_memory_reserved_bytes") != 0:
        fail("header-only encodes hold %d bytes of stripe memory"
             % metric("ecd_memory_reserved_bytes"))
    ok("8 encodes that sent only a header hold no stripe memory")
    # 16 streams that send 1 MiB and stall: each holds a stripe, together more than the budget.
    stalled_calls = [objects.Encode.future(
        encode_requests("stalled-%d" % i, os.urandom(1 << 20), stall=release), timeout=120)
        for i in range(16)]
    wait_for("the stalled encodes hold the budget",
             lambda: metric("ecd_memory_reserved_bytes") + stripe > budget, 10)
    ok("16 stalled encodes hold %d of %d bytes of stripe memory"
       % (metric("ecd_memory_reserved_bytes"), budget))
    # A read waiting for memory gives up at its deadline, and its slot is free again.
    data = os.urandom(3 << 20)
    other, channel = objects_stub(TCP)
    expect_rpc_error(lambda: list(other.Read(pb.ReadRequest(name="kept"), timeout=0.2)),
                     grpc.StatusCode.DEADLINE_EXCEEDED, [], "a read waiting for memory",
                     within=1.5)
    ok("a read waiting for stripe memory ended at its 0.2 s deadline")
    # Another client's encode succeeds once the stalled ones are cancelled.
    started = time.monotonic()
    other.Encode(encode_requests("other", data), timeout=4 * idle + 30)
    took = time.monotonic() - started
    if b"".join(r.data for r in other.Read(pb.ReadRequest(name="other"), timeout=30)) != data:
        fail("the other client's object reads back different bytes")
    ok("another client's encode succeeded after %.1f s, byte-exact" % took)
    message = ""
    for i, f in enumerate(headers_only + stalled_calls):
        try:
            f.result(timeout=4 * idle + 30)
            fail("stalled stream %d succeeded" % i)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED or \
                    "--stream-idle-timeout" not in (e.details() or ""):
                fail("stalled stream %d: %s: %s" % (i, e.code().name, e.details()))
            message = e.details()
    ok("all 24 stalled encodes were cancelled: DEADLINE_EXCEEDED: %s" % message)
    release.set()
    wait_for("the stripe memory is given back", lambda: metric("ecd_memory_reserved_bytes") == 0, 5)
    names = {o.name for o in objects.List(pb.ListRequest(), timeout=10).objects}
    if any(n.startswith(("silent-", "stalled-")) for n in names):
        fail("a cancelled encode was stored")
    ok("their memory is back (ecd_memory_reserved_bytes 0) and none of them was stored")
    # A read whose client does not take the data is cancelled too, and gives back its memory.
    big = os.urandom(48 << 20)
    other.Encode(encode_requests("big", big), timeout=60)
    stuck = objects.Read(pb.ReadRequest(name="big"), timeout=120)
    wait_for("the unconsumed read holds stripe memory",
             lambda: metric("ecd_memory_reserved_bytes") > 0, 10)
    wait_for("the unconsumed read is cancelled",
             lambda: metric("ecd_memory_reserved_bytes") == 0, 2 * idle + 15)
    try:
        for _ in stuck:
            pass
        fail("the unconsumed read succeeded")
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED or \
                "--stream-idle-timeout" not in (e.details() or ""):
            fail("the unconsumed read: %s: %s" % (e.code().name, e.details()))
        ok("a read that took no data was cancelled and gave its memory back: %s" % e.details())
    cancels = metric("ecd_stream_idle_cancels_total")
    if cancels < 25:
        fail("ecd_stream_idle_cancels_total is %s, expected at least 25" % cancels)
    wait_for("no call left in flight", lambda: metric("ecd_inflight_requests") == 0, 5)
    ok("ecd_stream_idle_cancels_total %d, ecd_inflight_requests 0" % cancels)
    counted = metric('ecd_rpc_requests_total{method="ecd.v1.Objects/Encode",'
                     'code="DEADLINE_EXCEEDED"}') or 0
    if counted < 24:
        fail("ecd_rpc_requests_total counts %d encodes as DEADLINE_EXCEEDED, not 24" % counted)
    ok("ecd_rpc_requests_total counts the cancelled encodes as DEADLINE_EXCEEDED, as their "
       "clients saw them")
    channel.close()


def lock_waiters(count):
    objects, _ = objects_stub(TCP)
    data = os.urandom(100000)
    objects.Encode(encode_requests("locked", data, block=4096), timeout=30)
    idle = metric("ecd_inflight_requests")
    release = threading.Event()

    def update_requests():
        yield pb.UpdateRequest(header=pb.UpdateHeader(name="locked", offset=0), data=b"x")
        release.wait()  # Holds the object's lock, sending nothing more.
    holder = objects.Update.future(update_requests(), timeout=120)
    wait_for("the update holds the lock", lambda: metric("ecd_inflight_requests") == idle + 1, 10)
    kinds = [
        ("stat", lambda: objects.Stat(pb.StatRequest(name="locked"), timeout=0.2)),
        ("read", lambda: list(objects.Read(pb.ReadRequest(name="locked"), timeout=0.2))),
        ("block get", lambda: list(objects.GetBlock(
            pb.GetBlockRequest(name="locked", stripe=0, index=0), timeout=0.2))),
        ("delete", lambda: objects.Delete(pb.DeleteRequest(name="locked"), timeout=0.2)),
    ]
    results = []

    def wait_once(i):
        what, call = kinds[i % len(kinds)]
        start = time.monotonic()
        try:
            call()
            return what, "OK", time.monotonic() - start
        except grpc.RpcError as e:
            return what, e.code().name, time.monotonic() - start
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        results = list(pool.map(wait_once, range(count)))
    codes = {}
    for what, code, took in results:
        codes[code] = codes.get(code, 0) + 1
        if code not in ("DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"):
            fail("a %s waiting for the lock ended with %s" % (what, code))
        if took > 1.5:
            fail("a %s waiting for the lock took %.2f s with a 0.2 s deadline" % (what, took))
    if codes.get("DEADLINE_EXCEEDED", 0) < count // 2:
        fail("too few calls waited for the lock: %s" % codes)
    ok("%d calls on the locked object (stat, read, block get, delete), 0.2 s deadline: %s, "
       "each within %.2f s" % (count, codes, max(r[2] for r in results)))
    wait_for("ecd_inflight_requests back at its idle value + the update",
             lambda: metric("ecd_inflight_requests") == idle + 1, 2)
    ok("ecd_inflight_requests is %d: only the update holding the lock" % (idle + 1))
    names = [o.name for o in objects.List(pb.ListRequest(), timeout=5).objects]
    if "locked" not in names:
        fail("the object is gone: a delete that gave up deleted it")
    listed = subprocess.run([os.environ["ECTL"], "--addr", TCP, "ls"], capture_output=True,
                            text=True, timeout=10)
    if listed.returncode != 0 or "locked" not in listed.stdout:
        fail("ecctl ls while the lock is held: exit %d: %s" % (listed.returncode, listed.stderr))
    ok("ecctl ls answers while the lock is held, and the object is still there")
    holder.cancel()
    release.set()
    wait_for("ecd_inflight_requests back at its idle value",
             lambda: metric("ecd_inflight_requests") == idle, 5)
    ok("the update cancelled: ecd_inflight_requests %d" % idle)


if MODE == "descriptors":
    descriptors(int(ARGS[0]), float(ARGS[1]))
elif MODE == "unix-listener":
    unix_listener(int(ARGS[0]))
elif MODE == "tls-listener":
    tls_listener(int(ARGS[0]))
elif MODE == "connection-limit":
    connection_limit(int(ARGS[0]))
elif MODE == "stalled":
    stalled(float(ARGS[0]))
elif MODE == "lock-waiters":
    lock_waiters(int(ARGS[0]))
else:
    fail("unknown mode " + MODE)
