// cursor.js runs, with node-postgres and pg-cursor, a cursor read 100
// rows at a time over 2,000 rows: Execute with a row limit and Flush,
// outside any transaction block, and Sync only once the cursor is
// closed. It connects with libpq's environment (PGHOST, PGPORT, PGUSER).
const { Client } = require('pg');
const Cursor = require('pg-cursor');
(async () => {
  const c = new Client({ database: 'postgres', ssl: false });
  await c.connect();
  const cur = c.query(new Cursor('SELECT id, v FROM big WHERE id > $1 ORDER BY id', [0]));
  let n = 0, reads = 0;
  for (;;) { const rows = await cur.read(100); reads++; n += rows.length; if (rows.length === 0) break; }
  await cur.close();
  console.log('node cursor rows', n, 'reads', reads);
  await c.end();
})().catch(e => { console.error(e); process.exit(1); });
