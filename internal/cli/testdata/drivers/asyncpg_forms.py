# asyncpg_forms runs, with asyncpg, the protocol forms TestDrivers
# replays: a cursor with prefetch 100 in a transaction over 2,000 rows
# (a portal read 100 rows at a time) and a statement cancelled by
# asyncpg's timeout. It connects with libpq's environment (PGHOST,
# PGPORT, PGUSER) and prints what each step saw.
import asyncio

import asyncpg


async def main():
    c = await asyncpg.connect(database='postgres', ssl=False)
    n = 0
    async with c.transaction():
        async for r in c.cursor('SELECT id, v FROM big WHERE id > $1 ORDER BY id DESC', 0, prefetch=100):
            n += 1
    print('asyncpg cursor rows', n)
    try:
        await c.execute('SELECT pg_sleep(5)', timeout=0.5)
        print('asyncpg timeout none')
    except asyncio.TimeoutError:
        print('asyncpg timeout cancelled')
    print('asyncpg after', await c.fetchval('SELECT count(*) FROM big WHERE id <= $1', 10))
    await c.close()


asyncio.run(main())
