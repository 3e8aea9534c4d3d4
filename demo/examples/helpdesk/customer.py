#!/usr/bin/python3
"""A simulated customer for harnessd's user protocol (user.command).

harnessd writes one JSON question per line on stdin:
  {"type": "start", "turn": 0, "episode_id": ..., "task": {...}?}
  {"type": "observation", "turn": N, "message": ..., "response": ..., "harness_done": false}
and reads one answer per line on stdout:
  {"message": "..."}  or  {"done": true, "reason": "..."}

The harness here is harnessd's test agent, so the customer writes its
requests as the agent's directives (say TEXT;;tool NAME JSON).
"""
import json
import sys

SCRIPT = [
    ('say Hello, I need 2 and 3 added up.;;tool add {"a":2,"b":3}', "add -> 5"),
    ('say Thanks. Can you look up ticket T-1234?;;tool echo {"text":"ticket T-1234: open"}', "T-1234: open"),
    ("say Great, please close it.;;reply Ticket T-1234 is closed.", "closed"),
]


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


step = 0
for line in sys.stdin:
    q = json.loads(line)
    if q["type"] == "observation":
        want = SCRIPT[step - 1][1]
        if want not in (q.get("response") or ""):
            answer({"done": True, "reason": "unhappy: wanted %r, got %r" % (want, q.get("response"))})
            continue
    if step == len(SCRIPT):
        answer({"done": True, "reason": "all %d requests answered" % step})
        continue
    answer({"message": SCRIPT[step][0]})
    step += 1
