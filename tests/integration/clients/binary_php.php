<?php
// php-memcached with OPT_BINARY_PROTOCOL: one call of each kind, results as JSON on stdout.
// Usage: php binary_php.php PORT. Run against memcached and against mcring; outputs must match.
$port = (int)$argv[1];
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
$m->setOption(Memcached::OPT_COMPRESSION, false);
$m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 3000);
$m->setOption(Memcached::OPT_RECV_TIMEOUT, 3000000);
$m->setOption(Memcached::OPT_SEND_TIMEOUT, 3000000);
$m->addServer('127.0.0.1', $port);
$out = [];
function rec($label, $v) {
  global $out, $m;
  $out[] = [$label, $v, $m->getResultCode()];
}
$big = str_repeat('x', 500000);
rec('set', $m->set('a', 'one'));
rec('get', $m->get('a'));
rec('get miss', $m->get('missing'));
rec('set int', $m->set('i', 42));
rec('get int', $m->get('i'));
$items = [];
for ($i = 0; $i < 20; $i++) { $items["m$i"] = "v$i"; }
rec('set multi', $m->setMulti($items));
$keys = [];
for ($i = 0; $i < 25; $i++) { $keys[] = "m$i"; }
$got = $m->getMulti($keys);
ksort($got);
rec('get multi', $got);
rec('add exists', $m->add('a', 'x'));
rec('add new', $m->add('b', 'two'));
rec('replace miss', $m->replace('nope', 'x'));
rec('replace hit', $m->replace('b', 'three'));
rec('append', $m->append('b', '+'));
rec('prepend', $m->prepend('b', '-'));
rec('get b', $m->get('b'));
rec('append miss', $m->append('nope', '+'));
$r = $m->get('a', null, Memcached::GET_EXTENDED);
$cas = $r['cas'];
rec('gets value', $r['value']);
rec('cas ok', $m->cas($cas, 'a', 'cas1'));
rec('cas conflict', $m->cas($cas, 'a', 'cas2'));
rec('get after cas', $m->get('a'));
rec('delete hit', $m->delete('a'));
rec('delete miss', $m->delete('a'));
rec('increment initial', $m->increment('n', 5, 100, 0));
rec('increment', $m->increment('n', 5));
rec('decrement initial', $m->decrement('d', 5, 7, 0));
rec('decrement', $m->decrement('d', 50));
rec('increment no initial', $m->increment('nn', 1));
rec('increment non-numeric', $m->increment('b', 1));
rec('touch hit', $m->touch('b', 100));
rec('touch miss', $m->touch('nope', 100));
rec('set big', $m->set('big', $big));
rec('get big', $m->get('big') === $big);
rec('set too big', $m->set('huge', str_repeat('y', 2 * 1024 * 1024)));
rec('delete multi', $m->deleteMulti(['m1', 'm2', 'nope']));
rec('get multi after', $m->getMulti(['m1', 'm2', 'm3']));
$stats = $m->getStats();
rec('stats has pid', count($stats) == 1 && isset(array_values($stats)[0]['pid']));
$versions = $m->getVersion();
rec('version', array_values($versions)[0]);
rec('flush', $m->flush());
rec('get after flush', $m->get('b'));
echo json_encode($out, JSON_PRETTY_PRINT), "\n";
