"""What the check scripts of test/e2e share: one PASS or FAIL line per
check, and the exit status that sums them up."""

failures = []


def check(ok, message):
    """Prints `message` as a PASS or FAIL line; remembers a failure."""
    print(("PASS " if ok else "FAIL ") + message, flush=True)
    if not ok:
        failures.append(message)


def finish(script):
    """The exit status: 1 after a failed check, else 0, with a last line."""
    if failures:
        print(f"{script}: {len(failures)} check(s) failed")
        return 1
    print(f"{script}: every check passed")
    return 0
