import asyncio, os, asyncpg
async def main():
    c = await asyncpg.connect(host='127.0.0.1', port=int(os.environ['PROXY_PORT']), user='postgres', database='postgres')
    n = 0
    async with c.transaction():
        async for r in c.cursor('SELECT id, v FROM big WHERE id > $1 ORDER BY id DESC', 0, prefetch=100):
            n += 1
    print('asyncpg cursor rows', n)
    try:
        await c.execute('SELECT pg_sleep(5)', timeout=0.5)
    except asyncio.TimeoutError:
        print('asyncpg timeout cancelled pg_sleep')
    await c.close()
asyncio.run(main())
