<?php
// Prints, as JSON, what php-memcached's getStats() (with each argument given) and getVersion()
// return for one server: {"version": "...", "stats": {"": {...}, "items": {...}, ...}}.
// Usage: php php_stats.php HOST PORT [ARG...]   (an empty ARG means getStats() with none)
$m = new Memcached();
$m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 3000);
$m->setOption(Memcached::OPT_RECV_TIMEOUT, 5000000);
$m->setOption(Memcached::OPT_SEND_TIMEOUT, 5000000);
$m->addServer($argv[1], (int)$argv[2]);
$out = ["stats" => []];
foreach (array_slice($argv, 3) as $arg) {
    $r = $arg === "" ? $m->getStats() : $m->getStats($arg);
    if ($r === false) {
        $out["stats"][$arg] = ["error" => $m->getResultMessage()];
        continue;
    }
    $out["stats"][$arg] = array_values($r)[0];
}
$v = $m->getVersion();
$out["version"] = $v === false ? null : array_values($v)[0];
echo json_encode($out), "\n";
