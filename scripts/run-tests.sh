#!/bin/sh
# Run the whole suite in two parts and fail if either fails: first everything but the real
# stack on the xdist workers given in PYTEST_ARGS, then the real-stack tier alone (it runs
# a real Neutron with real agents, and shares the two cores with nothing else).
# pytest's exit code 5 (no tests collected) is not a failure. Each part ends with its 15
# slowest tests, so a run's log shows where the time went.
set -u
pytest="$1"; shift
run() {
    "$pytest" --durations=15 "$@"
    rc=$?
    if [ "$rc" -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi
    return "$rc"
}
run "$@" --ignore=tests/realstack; first=$?
run tests/realstack; second=$?
[ "$first" -eq 0 ] && [ "$second" -eq 0 ]
