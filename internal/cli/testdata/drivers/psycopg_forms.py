# psycopg_forms runs, with psycopg 3, the protocol forms TestDrivers
# replays: parameters sent in binary (%b) with answers asked in binary,
# pipeline mode (several statements sent before one Sync, an error in
# the middle of one pipeline), and COPY in text and binary formats from
# and to the client. It connects with libpq's environment (PGHOST,
# PGPORT, PGUSER) and prints what each step saw.
import psycopg

with psycopg.connect(dbname='postgres', sslmode='disable', autocommit=True) as c:
    print('psycopg libpq', psycopg.pq.version(), psycopg.pq.__impl__)
    with c.cursor(binary=True) as cur:
        cur.execute('SELECT id, v FROM big WHERE id <= %b AND v <> %b ORDER BY id', (10, 'x'))
        rows = cur.fetchall()
        print('psycopg binary rows', len(rows), rows[-1])

    with c.pipeline():
        c.execute('INSERT INTO piped (x, note) VALUES (%s, %s)', (1, 'one'))
        c.execute('INSERT INTO piped (x, note) VALUES (%b, %b)', (2, 'two'))
        cur = c.execute('SELECT count(*) FROM piped WHERE x <= %s', (2,))
    print('psycopg pipeline count', cur.fetchone()[0])
    with c.cursor() as cur:
        cur.executemany('INSERT INTO piped (x, note) VALUES (%s, %s)', [(i, 'many') for i in range(3, 8)])
    try:
        with c.transaction(), c.pipeline():
            c.execute('INSERT INTO piped (x, note) VALUES (%s, %s)', (100, 'rolled back'))
            c.execute('SELECT 1/0')
            c.execute('INSERT INTO piped (x, note) VALUES (%s, %s)', (101, 'never run'))
        print('psycopg pipeline error none')
    except psycopg.errors.DivisionByZero as e:
        print('psycopg pipeline error', e.sqlstate)

    # Outside a transaction block, the statements up to the pipeline's
    # Sync are one implicit transaction: the error rolls back the INSERT
    # before it too.
    try:
        with c.pipeline():
            c.execute('INSERT INTO piped (x, note) VALUES (%s, %s)', (200, 'rolled back'))
            c.execute('SELECT 1/0')
        print('psycopg implicit error none')
    except psycopg.errors.DivisionByZero as e:
        print('psycopg implicit error', e.sqlstate)
    print('psycopg after errors', c.execute('SELECT count(*) FROM piped').fetchone()[0])

    with c.cursor() as cur:
        with cur.copy('COPY copied (id, v) FROM STDIN') as cp:
            for i in range(1, 501):
                cp.write_row((i, 'text %d' % i))
        with cur.copy('COPY copied (id, v) FROM STDIN (FORMAT BINARY)') as cp:
            cp.set_types(['int4', 'text'])
            for i in range(501, 601):
                cp.write_row((i, 'binary %d' % i))
        n = 0
        with cur.copy('COPY (SELECT id, v FROM big WHERE id <= 300) TO STDOUT') as cp:
            for row in cp.rows():
                n += 1
        print('psycopg copy out rows', n)
        cur.execute('SELECT count(*), sum(id) FROM copied')
        print('psycopg copied', *cur.fetchone())
