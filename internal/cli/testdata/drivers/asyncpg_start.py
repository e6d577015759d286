# asyncpg_start runs, with asyncpg, issue 77 item 3's case: three
# connections through a capture proxy that records nothing yet, each
# having set work_mem and prepared a statement (asyncpg prepares with
# Parse, Describe and Flush: its Sync comes with the statement's first
# use), the third inside a transaction still open; then a recording
# starts (POST /recordings on the admin interface, PGREHEARSE_ADMIN, into
# the directory of argument 1) and, once it answered, the two idle
# connections each run the prepared lookup 200 times; it is stopped. The
# third commits, every connection prepares another statement so, and a
# second recording (argument 2) sees all three run it 200 times. It
# connects with libpq's environment (PGHOST, PGPORT, PGUSER) and prints
# each recording's status as the stop answered it.
import asyncio
import json
import os
import sys
import urllib.request

import asyncpg

CALLS = 200


def admin(path, body):
    req = urllib.request.Request('http://' + os.environ['PGREHEARSE_ADMIN'] + path, method='POST',
                                 data=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(req) as resp:
        return json.load(resp)


async def lookups(stmt):
    for i in range(CALLS):
        await stmt.fetchval(i)


async def recording(out, stmts):
    rec = admin('/recordings', {'out': out})
    await asyncio.gather(*(lookups(s) for s in stmts))
    st = admin('/recordings/' + rec['id'] + '/stop', {})
    print('asyncpg recording', rec['id'], 'started with', rec.get('sessions_resumed', 0), 'sessions taken up,',
          rec.get('sessions_waiting_for_idle', 0), 'waiting; calls sent', CALLS * len(stmts), 'status',
          json.dumps({k: st.get(k) for k in ('sessions_resumed', 'sessions_resumed_late',
                                             'messages_skipped_before_recording', 'sessions_not_recorded_by_reason')},
                     sort_keys=True))


async def main():
    conns = [await asyncpg.connect(database='postgres', ssl=False) for _ in range(3)]
    tx = conns[2].transaction()
    await tx.start()
    stmts = []
    for c in conns:
        await c.execute("SET work_mem = '8MB'")
        stmts.append(await c.prepare('SELECT $1::int + 1'))
    await recording(sys.argv[1], stmts[:2])
    await tx.commit()
    stmts = [await c.prepare('SELECT $1::int * 2') for c in conns]
    await recording(sys.argv[2], stmts)
    for c in conns:
        await c.close()


asyncio.run(main())
