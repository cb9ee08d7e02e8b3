"""Hits every input limit of an ecd started by limits_test.sh and checks the status and message.

Usage: limits_client.py STUBS TCP_ADDR UNIX_SOCKET METRICS_ADDR {limits|deadline}

`limits` expects ecd started with --max-name-length 32 --max-object-size 1M
--max-message-size 2M --max-streams-per-client 2 --max-streams 3 --max-ingest-records 5;
`deadline` expects an object "big" of 64 MiB. Prints one "ok:" line per check, and exits 1 with
a FAIL line on the first check that does not hold.
"""

import json
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
from ecd.v1 import ecd_pb2 as pb  # noqa: E402
from ecd.v1 import ecd_pb2_grpc as rpc  # noqa: E402

TCP, UNIX, METRICS, MODE = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]


def fail(text):
    print("FAIL: " + text, file=sys.stderr)
    sys.exit(1)


def ok(text):
    print("   ok: " + text)


def stubs(addr):
    channel = grpc.insecure_channel(addr, options=[("grpc.max_send_message_length", 64 << 20)])
    return rpc.ObjectsStub(channel), rpc.DevicesStub(channel), rpc.CxlStub(channel)


objects, devices, cxl = stubs(TCP)


def expect(code, parts, call, what):
    """Runs call(); it must fail with `code` and a message holding every string of `parts`."""
    try:
        call()
    except grpc.RpcError as e:
        if e.code() != code:
            fail("%s: expected %s, got %s: %s" % (what, code.name, e.code().name, e.details()))
        for p in parts:
            if p not in (e.details() or ""):
                fail("%s: the message %r does not say %r" % (what, e.details(), p))
        ok("%s: %s: %s" % (what, code.name, e.details()))
        return e.details()
    fail("%s: expected %s, but the call succeeded" % (what, code.name))


def encode_requests(name, data, size=None, chunk=1 << 20):
    header = pb.EncodeHeader(name=name, data_blocks=4, parity_blocks=2, block_size=65536)
    if size is not None:
        header.size = size
    yield pb.EncodeRequest(header=header)
    for at in range(0, len(data), chunk):
        yield pb.EncodeRequest(data=data[at:at + chunk])


def encode(name, data, size=None, chunk=1 << 20, stub=None):
    return (stub or objects).Encode(encode_requests(name, data, size, chunk), timeout=60)


def read(name, stub=None, timeout=60):
    return b"".join(r.data for r in (stub or objects).Read(pb.ReadRequest(name=name),
                                                             timeout=timeout))


def used_bytes():
    return sum(d.used_bytes for d in devices.List(pb.ListDevicesRequest(), timeout=10).devices)


def names():
    return sorted(o.name for o in objects.List(pb.ListRequest(), timeout=10).objects)


def metric(series):
    page = urllib.request.urlopen("http://%s/metrics" % METRICS, timeout=10).read().decode()
    for line in page.splitlines():
        if line.split(" ")[0] == series:
            return float(line.split(" ")[1])
    return None


def absent(name, what):
    """After the refused call has ended on the server too (its handler may still be undoing what
    it began after the client has its answer), `name` is neither found nor listed."""
    wait_inflight(0)
    expect(grpc.StatusCode.NOT_FOUND, ["not found"],
           lambda: objects.Stat(pb.StatRequest(name=name), timeout=10), what + ": stat")
    if name in names():
        fail("%s: %s is listed" % (what, name))


def round_trip(tag):
    """The daemon still serves: an encode and a byte-exact read back, then a delete."""
    data = os.urandom(300000)
    encode("rt-" + tag, data)
    if read("rt-" + tag) != data:
        fail("%s: the round trip read back different bytes" % tag)
    objects.Delete(pb.DeleteRequest(name="rt-" + tag), timeout=10)
    ok("%s: still serving (encode + read of 300000 bytes, byte-exact)" % tag)


def check_names():
    IA = grpc.StatusCode.INVALID_ARGUMENT
    expect(IA, ["starts with '/'"], lambda: encode("/a", b"x"), "name with a leading '/'")
    expect(IA, ["backslash"], lambda: encode("a\\b", b"x"), "name with '\\'")
    expect(IA, ["U+202E", "\\u{202e}"], lambda: encode("a\u202eb", b"x"),
           "name with a right-to-left override")
    encode("dir/sub/f", b"x")  # A relative path is a name.
    if read("dir/sub/f") != b"x":
        fail("dir/sub/f read back different bytes")
    objects.Delete(pb.DeleteRequest(name="dir/sub/f"), timeout=10)
    ok("a name with '/' is stored, read and deleted")
    expect(IA, ["33 bytes", "limit is 32 bytes", "--max-name-length"],
           lambda: encode("n" * 33, b"x"), "name of 33 bytes")
    encode("n" * 32, b"x")  # The limit itself is allowed.
    objects.Delete(pb.DeleteRequest(name="n" * 32), timeout=10)
    ok("a name of exactly 32 bytes is stored")
    m = expect(IA, ["control character 0x0a", "\\x0a"], lambda: encode("a\nb", b"x"),
               "name with a newline")
    if "\n" in m:
        fail("the message echoes the newline")
    expect(IA, ["NUL"], lambda: read("a\0b"), "read of a name with NUL")
    expect(IA, ['".." is not allowed'], lambda: encode("..", b"x"), "name ..")
    for what, call in [
        ("stat", lambda: objects.Stat(pb.StatRequest(name="x/../y"), timeout=10)),
        ("delete", lambda: objects.Delete(pb.DeleteRequest(name="x/../y"), timeout=10)),
        ("block get",
         lambda: list(objects.GetBlock(pb.GetBlockRequest(name="x/../y"), timeout=10))),
        ("recover", lambda: list(objects.Recover(pb.RecoverRequest(name="x/../y"), timeout=10))),
        ("update", lambda: objects.Update(iter([pb.UpdateRequest(
            header=pb.UpdateHeader(name="x/../y"), data=b"z")]), timeout=10)),
    ]:
        expect(IA, ['".." segment'], call, "%s of a name with a '..' segment" % what)
    expect(grpc.StatusCode.NOT_FOUND, ["not found"], lambda: read("missing"),
           "a valid name that is missing")
    check_names_not_utf8()


def check_names_not_utf8():
    """A name that is not UTF-8, sent as raw bytes (the Python stubs cannot send one): Encode and
    Update refuse it by the name rule, every other call as a request that does not parse; all
    INVALID_ARGUMENT (limits_test.sh checks that ecd logged no libprotobuf line for them)."""
    IA = grpc.StatusCode.INVALID_ARGUMENT
    bad = b"a\xff\xc0z"
    name = b"\x0a" + bytes([len(bad)]) + bad  # field 1, the name in every ecd.v1 request

    def field1(body):
        return b"\x0a" + bytes([len(body)]) + body

    channel = grpc.insecure_channel(TCP)
    rule = 'object name is not valid UTF-8 at byte 1 of "a\\xff\\xc0z"; names are UTF-8 text'
    for method, header in [("Encode", name + b"\x10\x04\x18\x02"), ("Update", name)]:
        call = channel.stream_unary("/ecd.v1.Objects/" + method)
        expect(IA, [rule], lambda: call(iter([field1(header) + b"\x12\x01x"]), timeout=10),
               "%s of a name that is not UTF-8" % method.lower())
    for method, streaming in [("Stat", False), ("Delete", False), ("Read", True),
                              ("GetBlock", True), ("Recover", True), ("Scrub", True)]:
        if streaming:
            call = channel.unary_stream("/ecd.v1.Objects/" + method)
            run = lambda: list(call(name, timeout=10))  # noqa: E731
        else:
            call = channel.unary_unary("/ecd.v1.Objects/" + method)
            run = lambda: call(name, timeout=10)  # noqa: E731
        expect(IA, ["does not parse", "is not valid UTF-8", "UTF-8 text"], run,
               "%s of a name that is not UTF-8" % method.lower())
    channel.close()


def check_object_size():
    IA = grpc.StatusCode.INVALID_ARGUMENT
    before = used_bytes()
    # Declared in the header: refused before any data.
    expect(IA, ["2097152 bytes", "limit is 1048576 bytes (--max-object-size)"],
           lambda: encode("declared", b"", size=2 << 20), "declared size over the limit")
    absent("declared", "declared size over the limit")
    # Not declared: the stream stops once it carries more than the limit.
    expect(IA, ["more than 1048576 bytes", "--max-object-size", "nothing was stored"],
           lambda: encode("streamed", os.urandom((1 << 20) + 1), chunk=256 << 10),
           "streamed 1 MiB + 1 byte")
    absent("streamed", "streamed over the limit")
    if used_bytes() != before:
        fail("a refused encode left %d bytes allocated" % (used_bytes() - before))
    ok("refused encodes leave no extents allocated (%d bytes used before and after)" % before)
    # Declared size must match.
    expect(IA, ["declared 100 bytes but the stream carried 50"],
           lambda: encode("mismatch", b"m" * 50, size=100), "declared size not matching")
    absent("mismatch", "declared size not matching")
    # Exactly the limit is allowed, declared or not.
    data = os.urandom(1 << 20)
    encode("exact", data, size=len(data))
    encode("exact2", data)
    if read("exact") != data or read("exact2") != data:
        fail("an object of exactly the limit reads back different bytes")
    ok("objects of exactly 1 MiB (declared and not) are stored and read back byte-exact")
    # An append may not grow an object past the limit.
    version = objects.Stat(pb.StatRequest(name="exact"), timeout=10).object.version
    expect(IA, ["--max-object-size", "offset 1048576"],
           lambda: objects.Update(iter([pb.UpdateRequest(
               header=pb.UpdateHeader(name="exact", offset=1 << 20, append=True), data=b"z")]),
               timeout=10),
           "append past the limit")
    o = objects.Stat(pb.StatRequest(name="exact"), timeout=10).object
    if o.version != version or o.size != 1 << 20 or read("exact") != data:
        fail("a refused append changed the object")
    ok("the refused append left the object as it was (version %d)" % version)
    expect(IA, ["declared 10 bytes but the stream carried 1"],
           lambda: objects.Update(iter([pb.UpdateRequest(
               header=pb.UpdateHeader(name="exact", offset=0, size=10), data=b"z")]), timeout=10),
           "update with a declared size not matching")
    o = objects.Stat(pb.StatRequest(name="exact"), timeout=10).object
    if o.version != version or read("exact") != data:
        fail("a refused update changed the object")
    for n in ("exact", "exact2"):
        objects.Delete(pb.DeleteRequest(name=n), timeout=10)
    if used_bytes() != before:
        fail("space not given back after deletes")


def check_message_size():
    RE = grpc.StatusCode.RESOURCE_EXHAUSTED
    before = metric('ecd_limit_rejections_total{limit="max-message-size"}')
    expect(RE, ["limit of 2097152 bytes (--max-message-size)", "nothing was stored"],
           lambda: encode("huge-message", os.urandom(3 << 20), chunk=3 << 20),
           "a 3 MiB message over --max-message-size 2M")
    absent("huge-message", "a message over the limit")
    if metric('ecd_limit_rejections_total{limit="max-message-size"}') != before + 1:
        fail("the message size rejection was not counted")
    # Past twice the limit gRPC itself refuses the message, before ecd sees it: the stream looks
    # ended to the handler, and nothing may be committed all the same.
    for i in range(20):
        expect(RE, ["larger than max"],
               lambda: encode("huger-message", os.urandom(5 << 20), chunk=5 << 20),
               "a 5 MiB message (gRPC's own cap, twice the limit), try %d" % i)
        absent("huger-message", "a message over gRPC's cap")


def check_later_messages():
    """Encode and Update requests are parsed from gRPC's raw bytes (wire/data_message.h): a
    header on a later message, or a later message that is not valid protobuf, fails the call by
    name and stores nothing."""
    IA = grpc.StatusCode.INVALID_ARGUMENT
    channel = grpc.insecure_channel(TCP)
    raw_encode = channel.stream_unary("/ecd.v1.Objects/Encode",
                                      response_deserializer=pb.EncodeResponse.FromString)
    header = pb.EncodeHeader(name="later", data_blocks=4, parity_blocks=2, block_size=65536)
    first = pb.EncodeRequest(header=header, data=b"x" * 1000).SerializeToString()
    data = pb.EncodeRequest(data=os.urandom(100000)).SerializeToString()
    expect(IA, ["only the first message of an encode stream may carry a header"],
           lambda: raw_encode(iter([first, data, first]), timeout=60),
           "an encode whose third message carries a header")
    absent("later", "a header on a later message")
    # Field 2 (data) declares 10 bytes and carries 5.
    expect(IA, ["an encode message was refused", "field 2 is cut short", "nothing was stored"],
           lambda: raw_encode(iter([first, data, b"\x12\x0ashort"]), timeout=60),
           "an encode whose third message is cut short")
    absent("later", "a malformed later message")
    # The same bytes cut into many small messages store the same object.
    body = os.urandom(300001)
    pieces = [pb.EncodeRequest(data=body[at:at + 7777]).SerializeToString()
              for at in range(0, len(body), 7777)]
    raw_encode(iter([pb.EncodeRequest(header=header).SerializeToString()] + pieces), timeout=60)
    if read("later") != body:
        fail("an object sent in 39 raw messages reads back different")
    ok("an object sent in %d raw messages reads back byte for byte" % len(pieces))
    objects.Delete(pb.DeleteRequest(name="later"), timeout=60)
    channel.close()


def wait_inflight(n, seconds=60):
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if metric("ecd_inflight_requests") == n:
            return
        time.sleep(0.05)
    fail("ecd_inflight_requests did not reach %d (it is %s)" % (n, metric("ecd_inflight_requests")))


def hold(stub, name):
    """Starts an Encode that sends its header and then waits; returns (future, release event)."""
    release = threading.Event()

    def requests():
        yield pb.EncodeRequest(header=pb.EncodeHeader(name=name, block_size=65536))
        release.wait(60)

    return stub.Encode.future(requests(), timeout=60), release


def check_streams():
    RE = grpc.StatusCode.RESOURCE_EXHAUSTED
    unix_objects, unix_devices, _ = stubs("unix:" + UNIX)
    rejected_client = metric('ecd_limit_rejections_total{limit="max-streams-per-client"}')
    rejected_total = metric('ecd_limit_rejections_total{limit="max-streams"}')
    held = [hold(objects, "held-tcp-%d" % i) for i in range(2)]
    wait_inflight(2)
    expect(RE, ["ipv4:127.0.0.1", "2 in flight, the limit is 2 (--max-streams-per-client)"],
           lambda: devices.List(pb.ListDevicesRequest(), timeout=10),
           "a third call from one client")
    held.append(hold(unix_objects, "held-unix"))
    wait_inflight(3)
    expect(RE, ["3 in flight, the limit is 3 (--max-streams)"],
           lambda: unix_devices.List(pb.ListDevicesRequest(), timeout=10),
           "a fourth call in all (another client)")
    if metric('ecd_limit_rejections_total{limit="max-streams-per-client"}') != rejected_client + 1:
        fail("the per-client rejection was not counted")
    if metric('ecd_limit_rejections_total{limit="max-streams"}') != rejected_total + 1:
        fail("the total rejection was not counted")
    ok("ecd_limit_rejections_total counted both refusals")
    for future, release in held:
        future.cancel()
        release.set()
    wait_inflight(0)
    for i in range(2):
        absent("held-tcp-%d" % i, "a cancelled held stream")
    absent("held-unix", "a cancelled held stream")
    ok("the cancelled streams gave their slots back and stored nothing")


def check_ingest():
    line = json.dumps({"system": "cxl", "memdev": "mem1", "event": "cxl_memory_module",
                       "log": "Informational", "hdr_flags": 0, "health_status": 0})
    expect(grpc.StatusCode.INVALID_ARGUMENT,
           ["6 records", "limit is 5", "--max-ingest-records", "Nothing ingested"],
           lambda: cxl.Ingest(pb.CxlIngestRequest(json_lines=[line] * 6), timeout=10),
           "an Ingest of 6 records")
    r = cxl.Ingest(pb.CxlIngestRequest(json_lines=[line] * 5), timeout=10)
    if r.records != 5:
        fail("an Ingest of 5 records ingested %d" % r.records)
    ok("an Ingest of exactly 5 records is taken (%s)" % ",".join(r.actions))
    if metric('ecd_limit_rejections_total{limit="max-ingest-records"}') != 1:
        fail("the ingest rejection was not counted")


def check_deadlines():
    DE = grpc.StatusCode.DEADLINE_EXCEEDED
    size = objects.Stat(pb.StatRequest(name="big"), timeout=10).object.size
    for timeout in (0.001, 0.02):
        expect(DE, [], lambda: read("big", timeout=timeout),
               "a read of %d bytes with a %g s deadline" % (size, timeout))
        expect(DE, [], lambda: list(objects.Recover(pb.RecoverRequest(name="big"),
                                                    timeout=timeout)),
               "a recover of %d bytes with a %g s deadline" % (size, timeout))
        expect(DE, [], lambda: objects.Stat(pb.StatRequest(name="big", verify=True),
                                            timeout=timeout),
               "a stat --verify of %d bytes with a %g s deadline" % (size, timeout))
    wait_inflight(0)
    ok("every stopped call has ended on the daemon (ecd_inflight_requests 0)")
    round_trip("after deadlines")


if MODE == "limits":
    check_names()
    round_trip("after names")
    check_object_size()
    round_trip("after object size")
    check_message_size()
    round_trip("after message size")
    check_later_messages()
    round_trip("after later messages")
    check_streams()
    round_trip("after streams")
    check_ingest()
    round_trip("after ingest")
    if [n for n in names() if n != "keep"]:
        fail("objects left behind: %s" % names())
    ok("only the objects kept by the test are stored: %s" % names())
elif MODE == "deadline":
    check_deadlines()
else:
    fail("unknown mode " + MODE)
