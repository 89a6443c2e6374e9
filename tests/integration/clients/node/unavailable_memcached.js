// npm `memcached` (text protocol), one mcring as its one server: runs the steps given and prints
// each result as JSON. Usage: node unavailable_memcached.js PORT STEP...
// A step is get:KEY, multi:KEY,KEY,... or set:KEY (the value "v"); a result is {value} / {values}
// / {stored} or {error}. The client
// keeps its defaults for failures (retry 30 s, failures 5, remove false) but retries 0 within a
// request and a 1 s timeout, so a step that fails says so at once.
const Memcached = require('memcached');
const port = process.argv[2];
const mc = new Memcached(`127.0.0.1:${port}`, { timeout: 1000, retries: 0, idle: 5000 });
mc.on('issue', () => {});
mc.on('failure', () => {});
const out = [];
const call = (fn) => new Promise((resolve) => {
  const timer = setTimeout(() => resolve({ error: 'no answer in 5 s' }), 5000);
  fn((err, data) => {
    clearTimeout(timer);
    resolve(err ? { error: String(err.message || err) } : { data });
  });
});
(async () => {
  for (const step of process.argv.slice(3)) {
    const [op, arg] = [step.slice(0, step.indexOf(':')), step.slice(step.indexOf(':') + 1)];
    let r;
    if (op === 'get') {
      r = await call((cb) => mc.get(arg, cb));
      out.push([step, r.error !== undefined ? { error: r.error } : { value: r.data === undefined ? null : r.data }]);
    } else if (op === 'set') {
      r = await call((cb) => mc.set(arg, 'v', 0, cb));
      out.push([step, r.error !== undefined ? { error: r.error } : { stored: r.data }]);
    } else {
      r = await call((cb) => mc.getMulti(arg.split(','), cb));
      out.push([step, r.error !== undefined ? { error: r.error } : { values: r.data }]);
    }
  }
  console.log(JSON.stringify(out));
  mc.end();
  process.exit(0);  // its reconnect timers (retry: 30 s) would keep the process alive
})();
