#!/bin/bash
# The native confirmations recorded in bench/verdicts/corpus.py, for bench/verdicts/bugs2: builds the test
# binary, then runs each test under its stress and its control, printing failing processes and failing runs.
#   bench/verdicts/bugs2/confirm.sh [GO]   (GO defaults to the repository's .venv/bin/go)
set -u
here=$(cd "$(dirname "$0")" && pwd)
go=${1:-$here/../../../.venv/bin/go}
bin=$(mktemp -d)/bugs2.test
(cd "$here" && GO111MODULE=off "$go" test -c -o "$bin" .) || exit 2

# stress TEST PROCESSES COUNT [test flags...]: the environment comes from the caller
stress() {
  local t=$1 runs=$2 cnt=$3; shift 3
  local fp=0 fi=0 ex="" out rc
  for _ in $(seq "$runs"); do
    out=$("$bin" -test.run "^$t\$" -test.count "$cnt" "$@" 2>&1); rc=$?
    fi=$((fi + $(grep -c -- "--- FAIL" <<<"$out")))
    if [ $rc -ne 0 ]; then
      fp=$((fp + 1))
      [ -z "$ex" ] && ex=$(grep -m1 -E "fatal error|panic:|bugs2_test.go" <<<"$out")
    fi
  done
  echo "$t processes=$runs count=$cnt flags=[$*] BUGS2_N=${BUGS2_N:-} BUGS2_GC=${BUGS2_GC:-} GODEBUG=${GODEBUG:-}:" \
       "failing processes $fp/$runs, failing runs $fi; e.g. $ex"
}

for t in TestWithdraw TestConns TestLookup; do
  BUGS2_N=1000 stress $t 1 100 -test.cpu 1,2,4; BUGS2_N=200 stress $t 1 100 -test.cpu 1
done
BUGS2_N=100 stress TestHits 30 10 -test.cpu 1,2,4; BUGS2_N=100 stress TestHits 30 10 -test.cpu 1
BUGS2_N=100000000 stress TestPairs 20 1; BUGS2_N=100000000 GODEBUG=asyncpreemptoff=1 stress TestPairs 20 1
BUGS2_N=2000000 BUGS2_GC=1 stress TestAligned 20 20; BUGS2_N=2000000 stress TestAligned 20 20
for t in TestHeld TestPastEnd TestHandles TestStale TestReadFile TestHeader; do
  BUGS2_N=2000000 BUGS2_GC=1 GODEBUG=clobberfree=1 stress $t 10 20
  BUGS2_N=2000000 BUGS2_GC=1 stress $t 10 20
  BUGS2_N=2000000 GODEBUG=clobberfree=1 stress $t 10 20
done
