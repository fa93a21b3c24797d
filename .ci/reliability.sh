#!/usr/bin/env bash
# .ci/reliability.sh -- sanitizer, valgrind and fuzz runs (filled in by the reliability work).
exit 0
