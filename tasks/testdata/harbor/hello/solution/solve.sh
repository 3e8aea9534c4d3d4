#!/bin/bash
# HARNESSD-SOLUTION-MARKER-91c2
cd /app
tr '\n' ' ' < src/words.txt | sed 's/ $//' > "$GREETING_FILE"
echo >> "$GREETING_FILE"
