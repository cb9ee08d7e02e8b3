#!/usr/bin/env python3
"""Runs the real ecd under deploy/ecd.service's sandbox without systemd, and exercises it.

systemd-analyze verify only checks the unit's syntax; it cannot tell whether ecd survives its
SystemCallFilter (a missing io_uring_* kills ecd with SIGSYS when it opens its first device).
This script reads the unit and applies, in a child process, what systemd would:

  SystemCallFilter          allow-list expanded by `systemd-analyze syscall-filter`, every other
                            system call kills the process (SCMP_ACT_KILL_PROCESS), native
                            architecture only (SystemCallArchitectures=native)
  RestrictAddressFamilies   socket() of another family fails with EAFNOSUPPORT
  MemoryDenyWriteExecute    mmap(W|X), mprotect(X), pkey_mprotect(X), shmat(SHM_EXEC): EPERM
  RestrictNamespaces        clone3: ENOSYS (glibc falls back to clone), CLONE_NEW*: EPERM
  RestrictRealtime          sched_setscheduler(FIFO|RR|DEADLINE): EPERM
  RestrictSUIDSGID          chmod family with S_ISUID/S_ISGID: EPERM
  NoNewPrivileges, CapabilityBoundingSet=, LimitMEMLOCK, LimitNOFILE, UMask
  User                      when run as root: user nobody (the unit's ecd user need not exist)

with libseccomp through ctypes. Then it starts ecd with deploy/ecd.conf (data dir, socket and
port moved to a temp dir), and checks with ecctl: encode and read back over TCP and the Unix
socket, every device online with io_uring fixed buffers registered (LimitMEMLOCK is enough), a
scrub, a device evacuation through the rebuild scheduler, a CXL record through the policy, and
a clean exit 0 on SIGTERM within the unit's TimeoutStopSec.

Usage: sandbox_run.py UNIT CONF ECD ECCTL WORKDIR. Exit 0 pass, 1 fail, 77 skip (no libseccomp
or systemd-analyze).
"""
import ctypes
import ctypes.util
import errno
import json
import os
import pwd
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

from ini import read_settings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import prom_text  # noqa: E402  (reads /metrics by sample name and labels)

SKIP = 77

SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_EQ = 4
SCMP_CMP_MASKED_EQ = 7


def SCMP_ACT_ERRNO(e):
    return 0x00050000 | (e & 0xFFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def fail(message):
    print(f"sandbox: FAIL: {message}")
    sys.exit(1)


def skip(message):
    print(f"sandbox: SKIP: {message}")
    sys.exit(SKIP)


def parse_size(text):
    if text in ("infinity", ""):
        return resource.RLIM_INFINITY
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
    if not m:
        fail(f"cannot read size {text!r}")
    return int(m.group(1)) * 1024 ** "_KMGT".index(m.group(2) or "_")


def syscall_sets():
    """{"@group": [members...]} from `systemd-analyze syscall-filter`."""
    try:
        out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        skip(f"systemd-analyze syscall-filter: {e}")
    sets, cur = {}, None
    for line in out.split("\n"):
        if line.startswith("@"):
            cur = sets.setdefault(line.strip(), [])
        elif line.startswith("    ") and cur is not None and not line.strip().startswith("#"):
            cur.append(line.strip())
        elif not line.strip():
            cur = None
    return sets


def allowed_syscalls(unit):
    """The allow-list of the unit's SystemCallFilter lines (systemd's rules: the first line
    decides allow- or deny-list; later ~lines remove)."""
    sets = syscall_sets()

    def expand(name, seen):
        if not name.startswith("@"):
            return {name}
        if name in seen:
            return set()
        seen.add(name)
        if name not in sets:
            fail(f"unknown system call group {name}")
        out = set()
        for member in sets[name]:
            out |= expand(member, seen)
        return out

    lines = unit.get("SystemCallFilter", [])
    if not lines or lines[0].startswith("~"):
        fail("SystemCallFilter is not an allow-list")
    allowed = expand("@default", set())  # systemd adds @default to an allow-list
    for line in lines:
        deny = line.startswith("~")
        names = set()
        for item in line.lstrip("~").split():
            names |= expand(item.split(":")[0], set())
        allowed = allowed - names if deny else allowed | names
    return allowed


def effective_limit(res, want):
    """`want`, or the hard limit when this process may not raise it (no CAP_SYS_RESOURCE, as in
    many containers; systemd as PID 1 can)."""
    _, hard = resource.getrlimit(res)
    if hard == resource.RLIM_INFINITY or (want != resource.RLIM_INFINITY and want <= hard):
        return want
    try:  # Probe in a child: raising the hard limit is a one-way test here.
        pid = os.fork()
        if pid == 0:
            try:
                resource.setrlimit(res, (want, want))
                os._exit(0)
            except (ValueError, OSError):
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        return want if os.WEXITSTATUS(status) == 0 else hard
    except OSError:
        return hard


def sandbox_child(unit, argv, run_as):
    """In the forked child: limits, user, no_new_privs, seccomp; then exec ecd."""
    lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    libc = ctypes.CDLL(None, use_errno=True)

    def nr(name):
        n = lib.seccomp_syscall_resolve_name(name.encode())
        return n if n >= 0 else None

    def rule(ctx, action, name, *cmps):
        n = nr(name)
        if n is None:
            return
        arr = (ArgCmp * max(1, len(cmps)))(*[ArgCmp(*c) for c in cmps])
        rc = lib.seccomp_rule_add_array(ctx, action, n, len(cmps), arr)
        if rc < 0:
            os.write(2, f"sandbox: seccomp rule {name}: {rc}\n".encode())
            os._exit(90)

    def one(key, default=None):
        v = unit.get(key)
        return v[-1] if v else default

    for key, res in (("LimitMEMLOCK", resource.RLIMIT_MEMLOCK),
                     ("LimitNOFILE", resource.RLIMIT_NOFILE)):
        if one(key):
            lim = effective_limit(res, parse_size(one(key)))
            try:
                resource.setrlimit(res, (lim, lim))
            except (ValueError, OSError) as e:
                os.write(2, f"sandbox: cannot set {key}={one(key)}: {e}\n".encode())
                os._exit(91)
    os.umask(int(one("UMask", "0022"), 8))
    if one("CapabilityBoundingSet") == "" and os.geteuid() == 0:
        for cap in range(64):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the last cap
    if run_as is not None:
        os.setgroups([])
        os.setgid(run_as.pw_gid)
        os.setuid(run_as.pw_uid)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        os._exit(92)

    # Filter 1 (argument checks, default allow); loaded first because filter 2 may not allow
    # the seccomp() call itself. The kernel applies both; the strictest action wins.
    yes = ("yes", "true", "1", "on")
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    fams = one("RestrictAddressFamilies")
    if fams:
        allow = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}
        keep = {allow[f] for f in fams.split() if f in allow}
        for fam in range(46):
            if fam not in keep:
                rule(ctx, SCMP_ACT_ERRNO(errno.EAFNOSUPPORT), "socket", (0, SCMP_CMP_EQ, fam, 0))
    if one("MemoryDenyWriteExecute") in yes:
        wx = 0x2 | 0x4  # PROT_WRITE | PROT_EXEC
        rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), "mmap", (2, SCMP_CMP_MASKED_EQ, wx, wx))
        for name in ("mprotect", "pkey_mprotect"):
            rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), name, (2, SCMP_CMP_MASKED_EQ, 0x4, 0x4))
        rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), "shmat", (2, SCMP_CMP_MASKED_EQ, 0o100000, 0o100000))
    if one("RestrictNamespaces") in yes:
        rule(ctx, SCMP_ACT_ERRNO(errno.ENOSYS), "clone3")
        for flag in (0x80, 0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                     0x40000000):
            rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), "clone", (0, SCMP_CMP_MASKED_EQ, flag, flag))
            rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), "unshare", (0, SCMP_CMP_MASKED_EQ, flag, flag))
        rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), "setns")
    if one("RestrictRealtime") in yes:
        for policy in (1, 2, 6):  # SCHED_FIFO, SCHED_RR, SCHED_DEADLINE
            rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), "sched_setscheduler",
                 (1, SCMP_CMP_EQ, policy, 0))
    if one("RestrictSUIDSGID") in yes:
        for name, arg in (("chmod", 1), ("fchmod", 1), ("fchmodat", 2)):
            for bit in (0o4000, 0o2000):
                rule(ctx, SCMP_ACT_ERRNO(errno.EPERM), name, (arg, SCMP_CMP_MASKED_EQ, bit, bit))
    if lib.seccomp_load(ctx) != 0:
        os._exit(93)

    # Filter 2: the allow-list; anything else kills the process, as systemd does.
    ctx = lib.seccomp_init(SCMP_ACT_KILL_PROCESS)
    for name in sorted(allowed_syscalls(unit)):
        rule(ctx, SCMP_ACT_ALLOW, name)
    if lib.seccomp_load(ctx) != 0:
        os._exit(94)
    # In a sanitizer build (scripts/test.sh --asan), LeakSanitizer stops the world at exit with
    # ptrace, which the unit's filter rightly denies: leaks are checked by the other tests.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "detect_leaks=0"]))
    os.execve(argv[0], argv, env)


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    unit_path, conf, ecd, ecctl, work = sys.argv[1:]
    unit = read_settings(unit_path)
    if not (ctypes.util.find_library("seccomp") or os.path.exists("/lib/x86_64-linux-gnu/libseccomp.so.2")):
        skip("libseccomp not found")
    if not shutil.which("systemd-analyze"):
        skip("no systemd-analyze")
    allowed = allowed_syscalls(unit)
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        if name not in allowed:
            print(f"sandbox: note: {name} is not allowed by the unit's SystemCallFilter")

    run_as = None
    if os.geteuid() == 0:
        run_as = pwd.getpwnam("nobody")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)
    data, run = os.path.join(work, "data"), os.path.join(work, "run")
    for d in (data, run):
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o700 if d == data else 0o750)
        if run_as:
            os.chown(d, run_as.pw_uid, run_as.pw_gid)
    # Copies nobody can read and run, wherever the build tree is.
    ecd_copy, conf_copy = os.path.join(work, "ecd"), os.path.join(work, "ecd.conf")
    shutil.copy(ecd, ecd_copy)
    shutil.copy(conf, conf_copy)
    os.chmod(ecd_copy, 0o755)
    os.chmod(conf_copy, 0o644)
    port_file = os.path.join(run, "port")
    metrics_port_file = os.path.join(run, "metrics_port")
    sock = os.path.join(run, "ecd.sock")
    exec_start = unit["ExecStart"][-1].split()
    if exec_start[1:3] != ["--config", "/etc/ecd/ecd.conf"]:
        fail(f"unexpected ExecStart {unit['ExecStart'][-1]!r}")
    argv = [ecd_copy, "--config", conf_copy, "--data-dir", data, "--unix-socket", sock,
            "--listen", "127.0.0.1:0", "--port-file", port_file, "--device-size", "64M",
            "--metrics-listen", "127.0.0.1:0", "--metrics-port-file", metrics_port_file]
    # io_uring charges registered buffers (devices x nvme-host-memory) to RLIMIT_MEMLOCK unless
    # the process has CAP_IPC_LOCK. check_deploy.py checks the unit's limit covers ecd.conf; if
    # this machine will not let us raise the limit that far, shrink the pools to fit what we
    # can set, so that registration under the limit is still exercised.
    want = parse_size(unit.get("LimitMEMLOCK", [""])[-1])
    memlock = effective_limit(resource.RLIMIT_MEMLOCK, want)
    memlock_note = ""
    if memlock != want:
        conf_values = dict(re.findall(r'^\s*([\w-]+)\s*=\s*"?([^"\n]*)"?', open(conf).read(), re.M))
        devices = int(conf_values.get("devices", "8"))
        host = 1 << 20
        while host > 16384 and devices * host > memlock // 2:
            host //= 2
        # The DMA arena (the stripe budget) would not fit beside the pools either.
        argv += ["--nvme-host-memory", str(host), "--dma-arena", "0"]
        memlock_note = (f" (this machine caps RLIMIT_MEMLOCK at {memlock} bytes, so "
                        f"--nvme-host-memory {host} --dma-arena 0)")
        print(f"sandbox: note: cannot raise RLIMIT_MEMLOCK to {want}{memlock_note}")
    log_path = os.path.join(work, "ecd.log")
    log = open(log_path, "w")
    pid = os.fork()
    if pid == 0:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            sandbox_child(unit, argv, run_as)
        except BaseException as e:  # noqa: BLE001
            os.write(2, f"sandbox: child: {e}\n".encode())
        os._exit(95)
    log.close()

    def show_log():
        with open(log_path) as f:
            sys.stdout.write("---- ecd log ----\n" + f.read() + "-----------------\n")

    def dead(status):
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            hint = (" (a system call outside SystemCallFilter; run `strace -f` on ecd without "
                    "the sandbox to see which ones it makes)") if sig == signal.SIGSYS else ""
            return f"ecd was killed by {signal.Signals(sig).name}{hint}"
        return f"ecd exited with {os.WEXITSTATUS(status)}"

    done = None
    try:
        deadline = time.time() + 30
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            wpid, status = os.waitpid(pid, os.WNOHANG)
            if wpid:
                done = status
                show_log()
                fail(f"{dead(status)} before serving")
            if time.time() > deadline:
                show_log()
                fail("ecd did not start within 30 s")
            time.sleep(0.1)
        port = open(port_file).read().strip()

        def ctl(*args, addr=f"127.0.0.1:{port}", ok=True):
            r = subprocess.run([ecctl, "--addr", addr, "--timeout", "30", *args],
                               capture_output=True, text=True)
            if ok and r.returncode != 0:
                show_log()
                fail(f"ecctl {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
            return r.stdout

        src, back = os.path.join(work, "object.bin"), os.path.join(work, "back.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(5 * 1024 * 1024 + 123))
        ctl("encode", src, "--name", "smoke")
        ctl("read", "smoke", "-o", back, addr=f"unix:{sock}")
        if open(src, "rb").read() != open(back, "rb").read():
            fail("read back differs")
        devices = json.loads(ctl("--json", "device", "ls"))["devices"]
        for d in devices:
            if d.get("state") != "DEVICE_STATE_ONLINE":
                show_log()
                fail(f"device {d.get('id')} is {d.get('state')} under the sandbox")
            counters = d.get("counters", {})
            if str(counters.get("nvme_fixed_buffers")) != "1":
                fail(f"device {d.get('id')}: io_uring fixed buffers not registered "
                     f"(nvme_fixed_buffers={counters.get('nvme_fixed_buffers')}); "
                     "LimitMEMLOCK too small for devices x nvme-host-memory?")
        # The metrics endpoint works under the filter too, and sees the object.
        import urllib.request
        metrics_port = open(metrics_port_file).read().strip()
        page = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
        if prom_text.value(page.decode(), "ecd_objects") != 1:
            fail("/metrics under the sandbox does not show ecd_objects 1")
        ctl("scrub")
        ctl("cxl", "inject", "1", "--log", "failure", "--type", "memory-module",
            "--health-status", "4")
        deadline = time.time() + 20
        while True:  # the CXL policy evacuates device 1 through the rebuild scheduler
            jobs = json.loads(ctl("--json", "rebuild", "ls")).get("jobs", [])
            states = {j.get("state") for j in jobs}
            if jobs and states <= {"done", "failed"}:
                break
            if time.time() > deadline:
                fail(f"evacuation did not finish: {jobs}")
            time.sleep(0.2)
        if states != {"done"}:
            fail(f"evacuation job failed: {jobs}")
        ctl("read", "smoke", "-o", back)
        if open(src, "rb").read() != open(back, "rb").read():
            fail("read back after the evacuation differs")

        stop = int(re.sub(r"\D", "", unit.get("TimeoutStopSec", ["90"])[-1]) or 90)
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + stop
        while True:
            wpid, status = os.waitpid(pid, os.WNOHANG)
            if wpid:
                done = status
                break
            if time.time() > deadline:
                fail(f"ecd did not stop within TimeoutStopSec={stop}")
            time.sleep(0.1)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            show_log()
            fail(f"{dead(status)} after SIGTERM; want exit 0")
        with open(log_path) as f:
            errors = [l for l in f if " ERROR " in l]
        if errors:
            show_log()
            fail(f"ecd logged errors: {errors[0].strip()}")
        who = f"user {run_as.pw_name}" if run_as else f"uid {os.geteuid()}"
        print(f"sandbox: ecd ran as {who} under {len(allowed)} allowed system calls, "
              f"LimitMEMLOCK={unit.get('LimitMEMLOCK', ['-'])[-1]}{memlock_note}: encode, read (TCP and Unix "
              f"socket), {len(devices)} devices with fixed buffers, scrub, CXL evacuation, "
              "clean SIGTERM")
        return 0
    finally:
        if done is None:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main())
