// memjs (npm; binary protocol only): one call of each kind, results as JSON on stdout.
// Usage: node binary_memjs.js PORT. Run against memcached and against mcring; outputs must match.
const memjs = require('memjs');
const port = process.argv[2];
const mc = memjs.Client.create(`127.0.0.1:${port}`, { timeout: 3, retries: 0, logger: { log() {} } });
const out = [];
const str = (v) => (v === null || v === undefined ? null : Buffer.isBuffer(v) ? v.toString('latin1') : v);
async function rec(label, fn) {
  try {
    out.push([label, await fn()]);
  } catch (e) {
    out.push([label, 'error:' + (e.message || e).toString().split(':')[0]]);
  }
}
(async () => {
  const big = 'x'.repeat(500000);
  await rec('set', async () => (await mc.set('a', 'one', {})));
  await rec('get', async () => str((await mc.get('a')).value));
  await rec('get miss', async () => str((await mc.get('missing')).value));
  await rec('get flags', async () => { await mc.set('f', 'v', {}); return (await mc.get('f')).flags.length; });
  await rec('add exists', async () => mc.add('a', 'x', {}));
  await rec('add new', async () => mc.add('b', 'two', {}));
  await rec('replace miss', async () => mc.replace('nope', 'x', {}));
  await rec('replace hit', async () => mc.replace('b', 'three', {}));
  await rec('append', async () => mc.append('b', '+'));
  await rec('prepend', async () => mc.prepend('b', '-'));
  await rec('get b', async () => str((await mc.get('b')).value));
  await rec('append miss', async () => mc.append('nope', '+'));
  await rec('delete hit', async () => mc.delete('a'));
  await rec('delete miss', async () => mc.delete('a'));
  await rec('increment initial', async () => (await mc.increment('n', 5, { initial: 100 })).value);
  await rec('increment', async () => (await mc.increment('n', 5, {})).value);
  await rec('decrement initial', async () => (await mc.decrement('d', 5, { initial: 7 })).value);
  await rec('decrement', async () => (await mc.decrement('d', 50, {})).value);
  await rec('increment non-numeric', async () => (await mc.increment('b', 1, {})).value);
  await rec('touch hit', async () => mc.touch('b', 100));
  await rec('touch miss', async () => mc.touch('nope', 100));
  await rec('set big', async () => mc.set('big', big, {}));
  await rec('get big', async () => str((await mc.get('big')).value) === big);
  await rec('set too big', async () => mc.set('huge', 'y'.repeat(2 * 1024 * 1024), {}));
  for (let i = 0; i < 20; i++) await mc.set(`m${i}`, `v${i}`, {});
  await rec('get multi', async () => {
    const r = {};
    for (let i = 0; i < 25; i++) r[`m${i}`] = str((await mc.get(`m${i}`)).value);
    return r;
  });
  await rec('stats has pid', async () => new Promise((resolve) => {
    mc.stats((err, server, stats) => resolve(!err && stats && 'pid' in stats));
  }));
  await rec('stats settings', async () => new Promise((resolve) => {
    mc.statsWithKey('settings', (err, server, stats) => resolve(!err && stats && 'maxbytes' in stats));
  }));
  await rec('flush', async () => new Promise((resolve) => {
    mc.flush((err, r) => resolve(err ? 'error' : Object.values(r)));
  }));
  await rec('get after flush', async () => str((await mc.get('m1')).value));
  console.log(JSON.stringify(out, null, 1));
  mc.close();
})();
