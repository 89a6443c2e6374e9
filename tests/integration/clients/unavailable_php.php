<?php
// php-memcache (the old Memcache class) or php-memcached (Memcached, libmemcached), text
// protocol, one mcring as its one server: runs the steps given and prints each result as JSON.
// Usage: php unavailable_php.php memcache|memcached PORT STEP...
// A step is get:KEY, multi:KEY,KEY,... or set:KEY (the value "v"); a result is the value (null
// for a miss or an error: these libraries return false for both), a multi-get's {key: value}
// (false on error), a set's true or false.
$lib = $argv[1];
$port = (int)$argv[2];
if ($lib === 'memcache') {
  $m = new Memcache();
  // persistent off, weight 1, timeout 1 s, retry_interval 15 s (the default).
  $m->addServer('127.0.0.1', $port, false, 1, 1, 15);
} else {
  $m = new Memcached();
  $m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 1000);
  $m->setOption(Memcached::OPT_RECV_TIMEOUT, 1000000);
  $m->setOption(Memcached::OPT_SEND_TIMEOUT, 1000000);
  $m->addServer('127.0.0.1', $port);
}
$out = [];
foreach (array_slice($argv, 3) as $step) {
  [$op, $arg] = explode(':', $step, 2);
  if ($op === 'get') {
    $v = @$m->get($arg);
    $out[] = [$step, $v === false ? null : $v];
  } else if ($op === 'set') {
    $out[] = [$step, @$m->set($arg, 'v')];
  } else {
    $keys = explode(',', $arg);
    $v = $lib === 'memcache' ? @$m->get($keys) : @$m->getMulti($keys);
    if (is_array($v)) {
      ksort($v);
    }
    $out[] = [$step, $v === false ? false : (object)$v];
  }
}
echo json_encode($out), "\n";
