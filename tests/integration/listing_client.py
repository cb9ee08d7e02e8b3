"""Paged listing against a model, for listing_test.sh: 25,000 objects with 1,000-byte names
(folders by '/'), listed through pages of several sizes with and without a prefix and
delimiter, each result equal to the model's; a full listing while other clients encode and
delete objects, in which every object that exists throughout appears exactly once and in
order; Objects.Count equal to the model; bad page tokens and sizes refused.

Usage: listing_client.py STUBS TCP_ADDR COUNT
Prints one "ok:" line per check, and exits 1 with a FAIL line on the first that does not hold.
"""

import concurrent.futures
import random
import sys
import threading

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
from ecd.v1 import ecd_pb2 as pb  # noqa: E402
from ecd.v1 import ecd_pb2_grpc as rpc  # noqa: E402

ADDR, COUNT = sys.argv[2], int(sys.argv[3])
channel = grpc.insecure_channel(ADDR, options=[("grpc.max_receive_message_length", 64 << 20)])
objects = rpc.ObjectsStub(channel)


def fail(text):
    print("FAIL: " + text, file=sys.stderr)
    sys.exit(1)


def ok(text):
    print("   ok: " + text)


def encode(name, data=b"x"):
    header = pb.EncodeHeader(name=name, data_blocks=2, parity_blocks=1, block_size=4096)
    objects.Encode(iter([pb.EncodeRequest(header=header, data=data)]), timeout=60)


def delete(name):
    objects.Delete(pb.DeleteRequest(name=name), timeout=60)


def name_of(i):
    """About 1,000 bytes: a folder of 40, a subfolder of 7, then padding and the number."""
    head = "d%02d/s%d/" % (i % 40, i % 7)
    tail = "-%06d" % i
    return head + "n" * (1000 - len(head) - len(tail)) + tail


def expect_model(names, prefix, delimiter):
    out = []
    for n in sorted(names, key=lambda s: s.encode()):
        if not n.startswith(prefix):
            continue
        at = n.find(delimiter, len(prefix)) if delimiter else -1
        entry = ("P", n[:at + len(delimiter)]) if at >= 0 else ("O", n)
        if not out or out[-1] != entry:
            out.append(entry)
    return out


def list_all(prefix="", delimiter="", page_size=0, between=None):
    out, pages, token = [], 0, ""
    while True:
        page = objects.List(pb.ListRequest(prefix=prefix, delimiter=delimiter,
                                           page_size=page_size, page_token=token), timeout=60)
        pages += 1
        entries = [("O", o.name) for o in page.objects] + [("P", p) for p in page.common_prefixes]
        entries.sort(key=lambda e: e[1].encode())
        if page_size and len(entries) > page_size:
            fail("a page of %d entries for page_size %d" % (len(entries), page_size))
        if page.ByteSize() > 8 << 20:
            fail("a page of %d bytes, over half the message limit" % page.ByteSize())
        out += entries
        token = page.next_page_token
        if not token:
            return out, pages
        if between:
            between()


def make_objects():
    names = [name_of(i) for i in range(COUNT)]
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        for f in [pool.submit(encode, n) for n in names]:
            f.result()
    ok("%d objects with %d-byte names encoded" % (COUNT, len(names[0])))
    return set(names)


def check_queries(names):
    rng = random.Random(5)
    queries = [("", "", 0), ("", "/", 0), ("d07/", "/", 0), ("d07/", "", 333), ("d1", "/", 7),
               ("d21/s3/", "", 1000), ("d21/s3/", "/", 10000), ("zz", "", 0), ("d3", "s", 50)]
    for _ in range(4):
        queries.append(("d%02d/" % rng.randrange(40), rng.choice(["", "/"]),
                        rng.choice([1, 10, 500])))
    for prefix, delimiter, size in queries:
        if size == 1 and not delimiter:
            continue  # a page per object would take minutes; page size 1 is checked with folders
        got, pages = list_all(prefix, delimiter, size)
        want = expect_model(names, prefix, delimiter)
        if got != want:
            fail("prefix %r delimiter %r page_size %d: %d entries, the model has %d"
                 % (prefix, delimiter, size, len(got), len(want)))
        ok("prefix %r delimiter %r page_size %d: %d entries in %d pages, as the model"
           % (prefix, delimiter, size, len(got), pages))
    got, pages = list_all()
    if pages < COUNT * 1000 // (8 << 20):
        fail("%d pages of 1,000-byte names: a page would pass the byte bound" % pages)


def check_churn(names):
    """Lists everything while other clients encode new names and delete them again."""
    stop = threading.Event()
    made, errors = [], []

    def churn(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            try:
                n = name_of(rng.randrange(COUNT)) + "-churn-%d-%d" % (seed, rng.randrange(10 ** 9))
                encode(n)
                made.append(n)
                if rng.random() < 0.7:
                    delete(made.pop(rng.randrange(len(made))))
            except grpc.RpcError as e:
                errors.append(e)
                return

    workers = [threading.Thread(target=churn, args=(s,)) for s in range(4)]
    for w in workers:
        w.start()
    try:
        got, pages = list_all(page_size=997)
    finally:
        stop.set()
        for w in workers:
            w.join()
    if errors:
        fail("a churn client failed: %s" % errors[0])
    listed = [n for _, n in got]
    if listed != sorted(listed, key=lambda s: s.encode()):
        fail("the listing under churn is out of order")
    if len(set(listed)) != len(listed):
        fail("the listing under churn has duplicates")
    missing = names - set(listed)
    if missing:
        fail("%d objects that existed throughout are missing, e.g. %r"
             % (len(missing), sorted(missing)[0][:40]))
    ok("under churn: %d pages, every one of the %d stable objects once, in order, %d others"
       % (pages, len(names), len(listed) - len(names)))
    return set(made)


def check_count(names):
    c = objects.Count(pb.CountRequest(), timeout=60)
    if c.objects != len(names) or c.bytes != len(names):
        fail("Count: %d objects of %d bytes; the model has %d of %d"
             % (c.objects, c.bytes, len(names), len(names)))
    if c.degraded_stripes or c.lost_stripes or c.degraded_objects:
        fail("Count reports damage on a healthy store: %s" % c)
    ok("Count: %d objects, %d bytes, no damage" % (c.objects, c.bytes))


def check_refusals():
    first = objects.List(pb.ListRequest(page_size=10), timeout=60)
    for what, request in [
            ("a token of another prefix", pb.ListRequest(prefix="d0", page_token=first.next_page_token)),
            ("a token that is not ecd's", pb.ListRequest(page_token="bm90IGEgdG9rZW4")),
            ("a negative page size", pb.ListRequest(page_size=-1))]:
        try:
            objects.List(request, timeout=60)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.INVALID_ARGUMENT:
                fail("%s: %s, not INVALID_ARGUMENT" % (what, e.code().name))
            ok("%s: INVALID_ARGUMENT: %s" % (what, e.details()))
            continue
        fail("%s was accepted" % what)


def main():
    names = make_objects()
    check_queries(names)
    made = check_churn(names)
    check_count(names | made)
    for n in made:  # what the churn left, so that the shell part sees the model's names only
        delete(n)
    check_refusals()


main()
