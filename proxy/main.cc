// mcring entry point: flags (twemproxy's where it has one), subcommands, signals, wiring.
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/credentials.h"
#include "mcring_version.h"
#include "proxy/backend/pool_security.h"
#include "proxy/cli/plan_command.h"
#include "proxy/cli/route_command.h"
#include "proxy/common/log.h"
#include "proxy/common/written_file.h"
#include "proxy/control/inherited_listeners.h"
#include "proxy/control/proxy.h"
#include "proxy/control/resolve_once.h"
#include "proxy/control/systemd_notify.h"
#include "proxy/control/upgrade.h"
#include "proxy/net/event_loop.h"

namespace {

constexpr const char* kDefaultConfig = "/etc/mcring/mcring.yml";

void usage(FILE* out) {
  std::fprintf(out,
               "mcring %s: a memcached-compatible consistent-hashing proxy\n"
               "\n"
               "Usage: mcring [options]            run the proxy\n"
               "       mcring route -c FILE [--pool NAME] [KEY ...]\n"
               "                                   print the server each key routes to\n"
               "       mcring plan OLD.yml NEW.yml [--pool NAME] [--json]\n"
               "                                   predict the keys a config change moves\n"
               "\n"
               "Options:\n"
               "  -c, --conf-file FILE    configuration file (default: %s)\n"
               "  -t, --test-conf         check the configuration and exit (0 ok, 1 errors)\n"
               "  -v, --verbose N         log level: 0 error, 1 warn, 2 notice (default),\n"
               "                          3 info, 4 debug\n"
               "  -o, --output FILE       log file (default: stderr)\n"
               "  -p, --pid-file FILE     write the process id to FILE\n"
               "  -s, --stats-port PORT   admin HTTP port: /metrics /stats /healthz, POST /reload\n"
               "                          (default: 22222; 0 disables)\n"
               "  -a, --stats-addr ADDR   admin/stats HTTP address (default: 127.0.0.1)\n"
               "      --admin-token-file FILE  POST /reload then needs 'Authorization: Bearer\n"
               "                          <token>' (the file's one word); required when ADDR\n"
               "                          is not loopback\n"
               "      --admin-allowed-hosts NAME[,NAME...]  Host names admin requests may use\n"
               "                          besides the admin address (name or name:port)\n"
               "      --threads N         worker threads (default: half the cores, at least 1)\n"
               "      --shutdown-grace MS time to finish in-flight requests on SIGTERM\n"
               "                          (default: 10000)\n"
               "      --no-io-uring       read and write each socket with its own recv()/send()\n"
               "                          instead of one io_uring submission per loop pass\n"
               "      --backend-stats-interval S  read each backend's own stats (items, bytes,\n"
               "                          evictions) every S seconds (default: 10; 0: never)\n"
               "  -V, --version           print the version and exit\n"
               "  -h, --help              this help\n"
               "\n"
               "Signals: SIGHUP reloads the configuration; SIGTERM/SIGINT stop gracefully\n"
               "(a second one exits at once); SIGUSR2 upgrades: the binary is started again,\n"
               "takes over the listening sockets, and this process drains and exits.\n"
               "Listening sockets passed by systemd (LISTEN_FDS) are used, not bound anew.\n",
               MCRING_VERSION, kDefaultConfig);
}

int testConfig(const std::string& path) {
  mcring::config::LoadResult loaded = mcring::config::loadConfigFile(path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) {
      std::fprintf(stderr, "%s\n", e.toString().c_str());
    }
    std::fprintf(stderr, "configuration file '%s' syntax is invalid\n", path.c_str());
    return 1;
  }
  // The files it names: a certificate, key or credentials file that would stop the start (or be
  // a rejected reload) fails the test too, with the file named.
  std::vector<std::string> errors;
  mcring::core::buildPoolTls(*loaded.config, &errors);
  for (const auto& pool : loaded.config->pools) {
    for (const std::string* file : {&pool.client_auth_file, &pool.server_auth_file}) {
      std::string error;
      if (!file->empty() && !mcring::config::Credentials::load(*file, &error)) {
        errors.push_back("pool '" + pool.name + "': " + error);
      }
    }
  }
  if (!errors.empty()) {
    for (const auto& e : errors) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), e.c_str());
    }
    std::fprintf(stderr, "configuration file '%s' names files that cannot be used\n", path.c_str());
    return 1;
  }
  std::printf("configuration file '%s' syntax is ok\n", path.c_str());
  return 0;
}

}  // namespace

// With glibc's defaults a busy worker's heap shrinks (madvise DONTNEED) and grows back (page
// faults) around every burst of buffer chunks once frees coalesce at its top: measured with
// 16 KiB values after 2,000 clients had come and gone, 2.5x the CPU per request and half the
// throughput. Keeping 4 MiB of padding when trimming (per arena: one per worker thread) stops
// that; memory beyond it is still given back. An explicit MALLOC_TOP_PAD_ or GLIBC_TUNABLES
// malloc setting wins.
namespace {
// The binary as this process was started from it, for SIGUSR2: /proc/self/exe resolved now (a
// file renamed over that path later is what the upgrade runs), else argv[0].
std::string executablePath(const char* argv0) {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    return std::string(buf, static_cast<size_t>(n));
  }
  return argv0;
}

void keepMallocTopPad() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_TOP_PAD_") == nullptr &&
      (tunables == nullptr || std::strstr(tunables, "glibc.malloc.") == nullptr)) {
    mallopt(M_TOP_PAD, 4 * 1024 * 1024);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "route") == 0) {
    return mcring::cli::runRouteCommand(argc - 1, argv + 1, mcring::core::resolveDiscoveredOnce);
  }
  if (argc > 1 && std::strcmp(argv[1], "plan") == 0) {
    return mcring::cli::runPlanCommand(argc - 1, argv + 1, mcring::core::resolveDiscoveredOnce);
  }

  mcring::core::ProxyOptions options;
  options.config_path = kDefaultConfig;
  bool test_only = false;
  int verbosity = 2;
  std::string log_file;
  std::string pid_file;
  static const option kOptions[] = {{"conf-file", required_argument, nullptr, 'c'},
                                    {"test-conf", no_argument, nullptr, 't'},
                                    {"verbose", required_argument, nullptr, 'v'},
                                    {"output", required_argument, nullptr, 'o'},
                                    {"pid-file", required_argument, nullptr, 'p'},
                                    {"stats-port", required_argument, nullptr, 's'},
                                    {"stats-addr", required_argument, nullptr, 'a'},
                                    {"threads", required_argument, nullptr, 'T'},
                                    {"shutdown-grace", required_argument, nullptr, 'G'},
                                    {"backend-stats-interval", required_argument, nullptr, 'B'},
                                    {"no-io-uring", no_argument, nullptr, 'U'},
                                    {"admin-token-file", required_argument, nullptr, 'K'},
                                    {"admin-allowed-hosts", required_argument, nullptr, 'H'},
                                    {"version", no_argument, nullptr, 'V'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "c:tv:o:p:s:a:Vh", kOptions, nullptr)) != -1) {
    switch (c) {
      case 'c':
        options.config_path = optarg;
        break;
      case 't':
        test_only = true;
        break;
      case 'v':
        verbosity = std::atoi(optarg);
        break;
      case 'o':
        log_file = optarg;
        break;
      case 'p':
        pid_file = optarg;
        break;
      case 's':
        options.admin_port = static_cast<uint16_t>(std::strtoul(optarg, nullptr, 10));
        options.admin_port_explicit = true;
        break;
      case 'a':
        options.admin_address = optarg;
        break;
      case 'K':
        options.admin_token_file = optarg;
        break;
      case 'H': {
        std::string list = optarg;
        size_t start = 0;
        while (start <= list.size()) {
          size_t comma = list.find(',', start);
          std::string name =
              list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
          if (!name.empty()) {
            options.admin_allowed_hosts.push_back(name);
          }
          if (comma == std::string::npos) {
            break;
          }
          start = comma + 1;
        }
        break;
      }
      case 'T':
        options.threads = std::atoi(optarg);
        break;
      case 'U':
        options.io_uring = false;
        break;
      case 'B':
        options.backend_stats_interval_s = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 10));
        break;
      case 'G':
        options.shutdown_grace_ms = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 10));
        break;
      case 'V':
        std::printf("mcring %s\n", MCRING_VERSION);
        return 0;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "mcring: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  if (test_only) {
    return testConfig(options.config_path);
  }

  std::string error;
  if (!mcring::common::logInit(verbosity, log_file, &error)) {
    std::fprintf(stderr, "mcring: %s\n", error.c_str());
    return 1;
  }
  mcring::common::PidFile pid;
  if (!pid_file.empty() && !pid.open(pid_file, &error)) {
    MCRING_LOG(Error, "%s", error.c_str());
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  // Until the proxy watches it (Proxy::start): a SIGUSR2 while starting must not end the process.
  signal(SIGUSR2, SIG_IGN);
  keepMallocTopPad();
  mcring::net::initThreading();

  options.exec_path = executablePath(argv[0]);
  options.exec_args.assign(argv, argv + argc);
  // Listening sockets from systemd, and from the process this one upgrades (SIGUSR2 there).
  mcring::core::InheritedListeners inherited;
  inherited.addFromSystemd();
  std::unique_ptr<mcring::core::UpgradeChannel> upgrade =
      mcring::core::UpgradeChannel::fromEnvironment(&inherited, &error);
  if (!upgrade && !error.empty()) {
    MCRING_LOG(Error, "%s", error.c_str());
    return 1;
  }
  if (upgrade) {
    MCRING_LOG(Notice, "upgrade: pid %d takes over from pid %d", static_cast<int>(getpid()),
               static_cast<int>(getppid()));
  }

  mcring::core::Proxy proxy(options);
  proxy.inherit(std::move(inherited));
  if (!proxy.start()) {
    std::string why = mcring::common::logLastError();  // the first reason, before the summary
    MCRING_LOG(Error, "mcring could not start");
    if (upgrade) {
      upgrade->failed(why.empty() ? "see its log" : why);
    }
    pid.remove(/*started=*/false);
    return 1;
  }
  // Checked when opened; a write that fails now (a full disk) does not stop a running proxy.
  if (!pid_file.empty() && !pid.write(getpid(), &error)) {
    MCRING_LOG(Error, "%s", error.c_str());
  }
  // systemd (Type=notify): this process is the service's main one now, before the process it
  // upgrades exits.
  mcring::core::notifySystemd("READY=1\nMAINPID=" + std::to_string(getpid()));
  if (upgrade) {
    upgrade->ready();  // the old process stops accepting now
    upgrade.reset();
  }
  int rc = proxy.run();
  // After a hand-over the pid file names the new process: it is not ours to remove.
  if (!proxy.handedOver()) {
    pid.remove(/*started=*/true);
  }
  return rc;
}
