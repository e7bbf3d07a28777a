#!/bin/sh
# Stands in for a real publish step (a tag push, an upload): it says what
# it would do. FSD_CALL_ID lets a real one skip a call it already made.
printf 'published %s to %s (call %s)\n' "$1" "$2" "$FSD_CALL_ID"
