<?php
// php-memcached (binary protocol): touch(key, -1), which libmemcached sends as the expiration
// 0xffffffff; memcached reads it unsigned (a time in 2106) and keeps the key.
// Usage: php binary_php_touch.php PORT. Prints JSON [[label, result, result code], ...].
$port = (int)$argv[1];
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
$m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 3000);
$m->setOption(Memcached::OPT_RECV_TIMEOUT, 3000000);
$m->setOption(Memcached::OPT_SEND_TIMEOUT, 3000000);
$m->addServer('127.0.0.1', $port);
$out = [];
function rec($label, $v) {
  global $out, $m;
  $out[] = [$label, $v, $m->getResultCode()];
}
rec('set', $m->set('touched', 'value'));
rec('touch -1', $m->touch('touched', -1));
rec('get after touch -1', $m->get('touched'));
rec('set with -1', $m->set('set-1', 'value', -1));
rec('get after set -1', $m->get('set-1'));
echo json_encode($out), "\n";
