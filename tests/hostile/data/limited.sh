#!/bin/sh
# Usage: limited.sh EXPECT_RC EXPECT_TEXT COMMAND [ARG...]
# Runs COMMAND under a 1 GB address-space limit (so a huge allocation fails instead of
# swapping) and checks its exit status and that its output (stdout and stderr) holds
# EXPECT_TEXT.
expect_rc=$1
expect_text=$2
shift 2
# A sanitized build reserves terabytes of address space for its shadow memory and cannot start
# under the limit: there CORRAL_NO_ULIMIT is set and the sanitizer itself watches allocations.
if [ -z "${CORRAL_NO_ULIMIT:-}" ]; then
  ulimit -v 1000000 || exit 1
fi
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" != "$expect_rc" ]; then
  echo "FAIL: exit status $rc, expected $expect_rc"
  exit 1
fi
case $out in
  *"$expect_text"*) ;;
  *) echo "FAIL: the output lacks: $expect_text"; exit 1 ;;
esac
