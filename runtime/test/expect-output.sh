#!/usr/bin/env bash
# Runs a command and passes only if it exits 0 and its output (stdout and
# stderr together, echoed) has a line matching an extended regular
# expression. ctest's PASS_REGULAR_EXPRESSION alone ignores the exit status,
# so a command that printed the line and then failed would pass.
#
# Usage: expect-output.sh REGEX COMMAND [ARG...]
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "expect-output.sh: error: usage: expect-output.sh REGEX COMMAND [ARG...]" >&2
  exit 2
fi
regex="$1"
shift
output="$("$@" 2>&1)"
status=$?
printf '%s\n' "$output"
if [ "$status" -ne 0 ]; then
  echo "expect-output.sh: FAIL: exit status $status: $*" >&2
  exit 1
fi
if ! grep -Eq -- "$regex" <<<"$output"; then
  echo "expect-output.sh: FAIL: no output line matches '$regex': $*" >&2
  exit 1
fi
