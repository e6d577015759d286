const { Client } = require('pg');
const Cursor = require('pg-cursor');
(async () => {
  const c = new Client({ host: '127.0.0.1', port: Number(process.env.PROXY_PORT), user: 'postgres', database: 'postgres' });
  await c.connect();
  const cur = c.query(new Cursor('SELECT id, v FROM big WHERE id > $1 ORDER BY id', [0]));
  let n = 0, batches = 0;
  for (;;) { const rows = await cur.read(100); batches++; n += rows.length; if (rows.length === 0) break; }
  await cur.close();
  console.log('node cursor rows', n, 'reads', batches);
  await c.end();
})().catch(e => { console.error(e); process.exit(1); });
