#!/usr/bin/env bash
# TLS and token authorization of a real ecd (docs/security.md). With --tokens-file: no token and
# an unknown token get UNAUTHENTICATED, a read-only token's encode and an operator token's device
# state change get PERMISSION_DENIED, the right roles succeed (bytes read back exact); ecctl
# exits 5 with one stderr line for each refusal; --token beats --token-file beats ECD_TOKEN;
# ecd_auth_denied_total counts by reason; SIGHUP rotates the tokens and keeps the old ones when
# the new file is bad; a malformed token file stops ecd at start (exit 2, one line). TLS (CA,
# server and client certificates made with openssl here): a plaintext client is refused by a TLS
# listener, a TLS client with the CA works; with --tls-client-ca a client without a certificate
# (or with one from another CA) is refused, one with a certificate works. --listen 0.0.0.0
# without TLS: ecd refuses to start (exit 2, one line); with --insecure it serves. A --tls-key
# that is not the --tls-cert's key: ecd refuses to start (exit 2, one line). The Unix socket is
# mode 0660. ecd keeps serving after every refusal.
set -euo pipefail
ECD=$1
ECTL=$2
. "$(dirname "$0")/lib.sh"

CLIENT=()  # ecctl's credential flags for the running ecd

# start_auth [ecd flags...]: starts ecd (TCP on a free port, metrics on another) and waits until
# `ecctl ${CLIENT[@]} device ls` answers.
start_auth() {
  rm -f "$WORK/port" "$WORK/metrics_port"
  "$ECD" --data-dir "$WORK/data" --devices 8 --device-size 256M --port-file "$WORK/port" \
    --metrics-listen 127.0.0.1:0 --metrics-port-file "$WORK/metrics_port" "$@" \
    >>"$WORK/ecd.log" 2>&1 &
  ECD_PID=$!
  for _ in $(seq 1 100); do
    if [ -s "$WORK/port" ]; then
      ADDR="127.0.0.1:$(cat "$WORK/port")"
      METRICS="127.0.0.1:$(cat "$WORK/metrics_port" 2>/dev/null)"
      if "$ECTL" --addr "$ADDR" "${CLIENT[@]}" device ls >/dev/null 2>&1; then return 0; fi
    fi
    kill -0 "$ECD_PID" 2>/dev/null || fail "ecd exited during start-up"
    sleep 0.1
  done
  fail "ecd did not answer within 10 s"
}

# refused EXIT CODE TEXT CMD...: CMD must exit EXIT with one stderr line naming CODE and TEXT.
refused() {
  local want=$1 code=$2 text=$3 rc=0
  shift 3
  "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "expected exit $want from: $*; got $rc: $(cat "$WORK/err")"
  [ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one stderr line from: $*; got: $(cat "$WORK/err")"
  grep -q -- "$code" "$WORK/err" || fail "expected $code from: $*; got: $(cat "$WORK/err")"
  grep -qF -- "$text" "$WORK/err" || fail "expected '$text' from: $*; got: $(cat "$WORK/err")"
  echo "   refused (exit $rc): $(cat "$WORK/err")"
}

RO=$(openssl rand -hex 16)
OP=$(openssl rand -hex 16)
AD=$(openssl rand -hex 16)
printf '# ecd tokens: TOKEN ROLE [NAME]\n%s read-only reader\n%s operator ops\n%s admin root\n' \
  "$RO" "$OP" "$AD" >"$WORK/tokens"
chmod 600 "$WORK/tokens"

step "a malformed token file stops ecd at start with one line (exit 2)"
printf '%s superuser\n' "$RO" >"$WORK/bad-tokens"
rc=0
"$ECD" --data-dir "$WORK/data" --devices 8 --device-size 256M --listen 127.0.0.1:0 \
  --metrics-listen "" --tokens-file "$WORK/bad-tokens" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 2 ] || fail "ecd with a bad token file exited $rc, expected 2"
[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one line; got: $(cat "$WORK/err")"
grep -qF "ecd: --tokens-file: token file $WORK/bad-tokens: line 1: unknown role \"superuser\"" \
  "$WORK/err" || fail "unclear message: $(cat "$WORK/err")"
echo "   $(cat "$WORK/err")"

step "tokens on loopback: each case"
CLIENT=(--token "$AD")
start_auth --listen 127.0.0.1:0 --tokens-file "$WORK/tokens" --unix-socket "$WORK/ecd.sock"
head -c 300000 /dev/urandom >"$WORK/model.bin"
refused 5 UNAUTHENTICATED "needs a token" "$ECTL" --addr "$ADDR" ls
refused 5 UNAUTHENTICATED "not in ecd's token file" "$ECTL" --addr "$ADDR" --token "${RO}x" ls
refused 5 PERMISSION_DENIED "needs the operator role; token \"reader\" has read-only" \
  "$ECTL" --addr "$ADDR" --token "$RO" encode "$WORK/model.bin" --name obj
"$ECTL" --addr "$ADDR" --token "$OP" -q encode "$WORK/model.bin" --name obj --block-size 4K >/dev/null
echo "   operator encode: ok"
"$ECTL" --addr "$ADDR" --token "$RO" read obj -o "$WORK/obj.out" >/dev/null
cmp "$WORK/model.bin" "$WORK/obj.out" || fail "read-only read differs from the model"
echo "   read-only read: ok, byte-exact"
refused 5 PERMISSION_DENIED "needs the admin role; token \"ops\" has operator" \
  "$ECTL" --addr "$ADDR" --token "$OP" device fail 3
refused 5 PERMISSION_DENIED "needs the admin role" \
  "$ECTL" --addr "$ADDR" --token "$OP" cxl inject 2 --log failure --type memory-module --health-status 4
"$ECTL" --addr "$ADDR" --token "$AD" device fail 3 >/dev/null
state=$("$ECTL" --addr "$ADDR" --token "$RO" --json device ls | json '[x["state"] for x in d["devices"] if int(x.get("id", 0)) == 3][0]')
[ "$state" = "DEVICE_STATE_FAILED" ] || fail "device 3 is $state after an admin's device fail"
"$ECTL" --addr "$ADDR" --token "$AD" device online 3 >/dev/null
echo "   admin device fail/online: ok"
"$ECTL" --addr "$ADDR" --token "$AD" read obj -o "$WORK/obj.out" >/dev/null
cmp "$WORK/model.bin" "$WORK/obj.out" || fail "admin read differs from the model"

step "the example Python client sends --token (or ECD_TOKEN) too"
PYCLIENT=(/usr/bin/python3 "$(cd "$(dirname "$0")/../.." && pwd)/docs/examples/ecd_client.py")
export PYTHONDONTWRITEBYTECODE=1
rc=0
"${PYCLIENT[@]}" --addr "$ADDR" ls >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q UNAUTHENTICATED "$WORK/err" ||
  fail "python client without a token: exit $rc, $(cat "$WORK/err")"
"${PYCLIENT[@]}" --addr "$ADDR" --token "$RO" ls | grep -q obj || fail "python client --token ls"
ECD_TOKEN="$OP" "${PYCLIENT[@]}" --addr "$ADDR" stat obj >/dev/null || fail "python client ECD_TOKEN"
echo "   ok"

step "token precedence: --token > --token-file > ECD_TOKEN"
printf '%s\n' "$OP" >"$WORK/op.token"
ECD_TOKEN="$RO" "$ECTL" --addr "$ADDR" ls >/dev/null || fail "ECD_TOKEN was not used"
refused 5 PERMISSION_DENIED "has read-only" env ECD_TOKEN="$RO" "$ECTL" --addr "$ADDR" rm obj
ECD_TOKEN="$RO" "$ECTL" --addr "$ADDR" --token-file "$WORK/op.token" -q \
  encode "$WORK/model.bin" --name obj2 --block-size 4K >/dev/null || fail "--token-file did not beat ECD_TOKEN"
refused 5 PERMISSION_DENIED "has read-only" \
  "$ECTL" --addr "$ADDR" --token "$RO" --token-file "$WORK/op.token" rm obj2
refused 3 "" "--token-file: cannot read $WORK/none" "$ECTL" --addr "$ADDR" --token-file "$WORK/none" ls
echo "   ok"

step "the unix socket is mode 0660 and takes tokens too"
mode=$(stat -c %a "$WORK/ecd.sock")
[ "$mode" = 660 ] || fail "unix socket mode is $mode, expected 660"
refused 5 UNAUTHENTICATED "needs a token" "$ECTL" --addr "unix:$WORK/ecd.sock" ls
"$ECTL" --addr "unix:$WORK/ecd.sock" --token "$RO" ls | grep -q obj2 || fail "ls over the socket"
echo "   mode $mode"

step "ecd_auth_denied_total counts refusals by reason"
unauth=$(metric 'ecd_auth_denied_total{reason="unauthenticated"}')
denied=$(metric 'ecd_auth_denied_total{reason="permission_denied"}')
[ "$unauth" = 4 ] || fail "ecd_auth_denied_total{reason=\"unauthenticated\"} is '$unauth', expected 4"
[ "$denied" = 5 ] || fail "ecd_auth_denied_total{reason=\"permission_denied\"} is '$denied', expected 5"
echo "   unauthenticated $unauth, permission_denied $denied"

step "SIGHUP rotates the tokens; a bad file keeps the old ones"
RO2=$(openssl rand -hex 16)
printf '%s read-only reader2\n%s admin root\n' "$RO2" "$AD" >"$WORK/tokens"
kill -HUP "$ECD_PID"
for _ in $(seq 1 50); do grep -q "SIGHUP: reloaded" "$WORK/ecd.log" && break; sleep 0.1; done
grep -q "SIGHUP: reloaded the tokens of $WORK/tokens" "$WORK/ecd.log" || fail "no reload logged"
refused 5 UNAUTHENTICATED "not in ecd's token file" "$ECTL" --addr "$ADDR" --token "$RO" ls
"$ECTL" --addr "$ADDR" --token "$RO2" ls >/dev/null || fail "the new token is refused"
printf 'short admin\n' >"$WORK/tokens"
kill -HUP "$ECD_PID"
for _ in $(seq 1 50); do grep -q "previous tokens stay in force" "$WORK/ecd.log" && break; sleep 0.1; done
grep -q "SIGHUP: token file $WORK/tokens: line 1: the token is 5 characters.*the previous tokens stay in force" \
  "$WORK/ecd.log" || fail "the bad reload was not logged"
"$ECTL" --addr "$ADDR" --token "$RO2" read obj -o "$WORK/obj.out" >/dev/null
cmp "$WORK/model.bin" "$WORK/obj.out" || fail "read after a bad reload differs"
kill -0 "$ECD_PID" || fail "ecd died"
echo "   rotated; bad file kept the old tokens; still serving"
stop_ecd

step "TLS: make a CA, a server certificate (127.0.0.1, localhost) and client certificates"
P="$WORK/pki"
mkdir -p "$P"
ossl() { openssl "$@" >>"$WORK/openssl.log" 2>&1 || fail "openssl $1 failed: $(tail -3 "$WORK/openssl.log")"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ecd-test-ca -keyout "$P/ca.key" -out "$P/ca.pem"
ossl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$P/server.key" -out "$P/server.csr"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$P/server.ext"
ossl x509 -req -in "$P/server.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
  -extfile "$P/server.ext" -out "$P/server.pem"
ossl req -newkey rsa:2048 -nodes -subj /CN=ecctl-test -keyout "$P/client.key" -out "$P/client.csr"
printf 'extendedKeyUsage=clientAuth\n' >"$P/client.ext"
ossl x509 -req -in "$P/client.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
  -extfile "$P/client.ext" -out "$P/client.pem"
# A client certificate from a CA ecd does not trust.
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca -keyout "$P/other.key" -out "$P/other.pem"
chmod 600 "$P"/*.key
echo "   made in $P"

step "TLS listener: a plaintext client is refused, a TLS client works"
CLIENT=(--tls-ca "$P/ca.pem")
start_auth --listen 127.0.0.1:0 --tls-cert "$P/server.pem" --tls-key "$P/server.key"
grep -q "port [0-9]*, TLS)" "$WORK/ecd.log" || fail "ecd does not log that it serves TLS"
refused 1 UNAVAILABLE "" "$ECTL" --addr "$ADDR" --timeout 5 ls
"$ECTL" --addr "$ADDR" "${CLIENT[@]}" read obj -o "$WORK/obj.out" >/dev/null
cmp "$WORK/model.bin" "$WORK/obj.out" || fail "TLS read differs from the model"
"$ECTL" --addr "localhost:$(cat "$WORK/port")" "${CLIENT[@]}" ls | grep -q obj2 || fail "TLS by name"
# A CA that did not sign the server's certificate: the client refuses the server.
refused 1 UNAVAILABLE "" "$ECTL" --addr "$ADDR" --tls-ca "$P/other.pem" --timeout 5 ls
echo "   TLS read byte-exact"
stop_ecd

step "mutual TLS: a client without a certificate (or with a foreign one) is refused"
printf '%s read-only reader\n' "$RO" >"$WORK/tokens"
CLIENT=(--tls-ca "$P/ca.pem" --tls-cert "$P/client.pem" --tls-key "$P/client.key" --token "$RO")
start_auth --listen 127.0.0.1:0 --tls-cert "$P/server.pem" --tls-key "$P/server.key" \
  --tls-client-ca "$P/ca.pem" --tokens-file "$WORK/tokens"
grep -q "port [0-9]*, mutual TLS)" "$WORK/ecd.log" || fail "ecd does not log that it serves mutual TLS"
refused 1 UNAVAILABLE "" "$ECTL" --addr "$ADDR" --tls-ca "$P/ca.pem" --token "$RO" --timeout 5 ls
refused 1 UNAVAILABLE "" "$ECTL" --addr "$ADDR" --tls-ca "$P/ca.pem" --tls-cert "$P/other.pem" \
  --tls-key "$P/other.key" --token "$RO" --timeout 5 ls
refused 1 UNAVAILABLE "" "$ECTL" --addr "$ADDR" --token "$RO" --timeout 5 ls
"$ECTL" --addr "$ADDR" "${CLIENT[@]}" read obj -o "$WORK/obj.out" >/dev/null
cmp "$WORK/model.bin" "$WORK/obj.out" || fail "mutual TLS read differs from the model"
# TLS and tokens are two layers: a good certificate without a token is still UNAUTHENTICATED.
refused 5 UNAUTHENTICATED "needs a token" "$ECTL" --addr "$ADDR" --tls-ca "$P/ca.pem" \
  --tls-cert "$P/client.pem" --tls-key "$P/client.key" ls
echo "   mutual TLS read byte-exact"
stop_ecd

step "non-loopback --listen without TLS: refused at start (exit 2, one line); --insecure serves"
rc=0
"$ECD" --data-dir "$WORK/data" --devices 8 --device-size 256M --listen 0.0.0.0:0 \
  --metrics-listen "" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 2 ] || fail "ecd on 0.0.0.0 without TLS exited $rc, expected 2"
[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one line; got: $(cat "$WORK/err")"
grep -qF "ecd: refusing to serve plaintext gRPC on non-loopback address 0.0.0.0:0: give --tls-cert and --tls-key" \
  "$WORK/err" || fail "unclear message: $(cat "$WORK/err")"
echo "   $(cat "$WORK/err")"
rc=0
"$ECD" --data-dir "$WORK/data" --listen 0.0.0.0:0 --tls-cert "$P/server.pem" --metrics-listen "" \
  >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF -- "--tls-cert and --tls-key go together" "$WORK/err" ||
  fail "a certificate without a key: exit $rc, $(cat "$WORK/err")"

step "a --tls-key that is not --tls-cert's key: refused at start (exit 2, one line)"
rc=0
"$ECD" --data-dir "$WORK/data" --listen 127.0.0.1:0 --tls-cert "$P/server.pem" \
  --tls-key "$P/client.key" --metrics-listen "" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 2 ] || fail "ecd with a mismatched key exited $rc, expected 2: $(cat "$WORK/err")"
[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one line; got: $(cat "$WORK/err")"
[ "$(cat "$WORK/err")" = "ecd: --tls-key $P/client.key does not match --tls-cert $P/server.pem; give the key the certificate was made for" ] ||
  fail "unclear message: $(cat "$WORK/err")"
echo "   $(cat "$WORK/err")"
CLIENT=()
start_auth --listen 0.0.0.0:0 --insecure
grep -q "WARN --insecure: serving plaintext gRPC on 0.0.0.0:0" "$WORK/ecd.log" || fail "no --insecure warning"
"$ECTL" --addr "$ADDR" read obj -o "$WORK/obj.out" >/dev/null
cmp "$WORK/model.bin" "$WORK/obj.out" || fail "--insecure read differs from the model"
echo "   --insecure: serving, read byte-exact"
stop_ecd
echo
echo "PASS: auth"
