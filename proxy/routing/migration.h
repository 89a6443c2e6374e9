// The prediction for a membership change: which share of the key-hash space moves, and where.
//
// Pure and single-threaded: computed from two immutable Routers (off the hot path, for
// `mcring plan` and the admin endpoint). Servers are matched across the two topologies by
// identity ("host:port"), so a server that stays keeps its keys even if its position changes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::routing {

// How a MigrationPlan was computed.
enum class MigrationMethod : uint8_t {
  // Counted over all 2^32 hash values: ketama -> ketama by intersecting the rings' arcs; modula /
  // maglev -> modula / maglev over the residues of lcm(table sizes).
  Exact,
  // Evaluated at MigrationOptions::samples hash values, one in each equal slice of the hash
  // space (jump, rendezvous, mixed distributions, or residue tables whose lcm is too large).
  Sampled,
  // A key's old and new server are independent: the distribution ignores the hash (random), or
  // the hash function or hash_tag changes, so a key's old and new hashes are unrelated. The
  // matrix is the product of the two ownership vectors.
  Independent,
};
std::string_view migrationMethodName(MigrationMethod m);  // "exact", "sampled", "independent"

struct MigrationOptions {
  uint32_t samples = uint32_t{1} << 20;             // hash values evaluated when sampling
  uint64_t max_exact_residues = uint64_t{1} << 26;  // lcm(table sizes) walked at most
  bool exact = true;  // false: sample even where exact counting applies (to cross-check it)
};

// One non-zero cell of the matrix.
struct MigrationCell {
  uint32_t from;    // index into MigrationPlan::before
  uint32_t to;      // index into MigrationPlan::after
  double fraction;  // of the whole hash space
  bool moved;       // the identities differ
};

struct MigrationPlan {
  MigrationMethod method = MigrationMethod::Exact;
  std::vector<std::string> before;  // identities, in the old router's server order
  std::vector<std::string> after;   // identities, in the new router's server order
  // matrix[i][j]: fraction of the hash space owned by before[i] and then by after[j]. Sums to 1.
  std::vector<std::vector<double>> matrix;
  // The matrix's row and column sums: each side's ownership, consistent with `matrix` (for
  // Exact, equal to Router::ownership()).
  std::vector<double> ownership_before;
  std::vector<double> ownership_after;
  double moved = 0;      // fraction whose owner identity changes: sum of cells with moved == true
  uint64_t samples = 0;  // hash values evaluated (Sampled only)

  // The non-zero cells, largest fraction first (ties by from, then to).
  std::vector<MigrationCell> cells() const;
  // Shares of the whole hash space leaving / reaching a server: moved cells of its row / column.
  double movedOut(size_t before_index) const;
  double movedIn(size_t after_index) const;
};

// The plan for changing from `before` (servers `before_ids`) to `after` (servers `after_ids`).
// Each ids vector is parallel to its router's server list; identities must be unique per side.
MigrationPlan planMigration(const Router& before, std::span<const std::string> before_ids,
                            const Router& after, std::span<const std::string> after_ids,
                            const MigrationOptions& options = {});

// What a change does to replica sets (Router::preferenceList with each side's `replicas`): the
// share of the key-hash space whose set of servers (by identity) changes, and per server the
// share of the space whose set it joins or leaves. Meaningful when a side has replicas > 1; with
// replicas 1 on both sides it repeats MigrationPlan (a set is its primary).
struct ReplicaServerShare {
  std::string id;     // identity; the old side's servers in order, then the new side's added ones
  double before = 0;  // share of the hash space whose old set holds it (all servers sum to R)
  double after = 0;   // ... whose new set holds it
  double lost = 0;    // ... whose old set holds it and new set does not
  double gained = 0;  // ... whose new set holds it and old set did not (copies to fill)
};

struct ReplicaPlan {
  // Exact: ketama -> ketama over the pieces of the union of both rings (a replica set depends
  // only on the first point at or above the hash), modula / maglev over the residues of
  // lcm(table sizes). Sampled: ReplicaOptions::samples evenly spaced hashes (stratified, as
  // MigrationPlan). Independent: the hash changes (or a side is random), so old and new sets are
  // drawn from independent hashes (sampled too; an estimate).
  MigrationMethod method = MigrationMethod::Exact;
  uint64_t samples = 0;          // hashes evaluated (Sampled, Independent)
  uint32_t replicas_before = 1;  // each side's Router options().replicas
  uint32_t replicas_after = 1;
  double changed = 0;     // share whose replica set changes as a set (a member leaves or joins)
  double order_only = 0;  // share whose set is the same but in another order (primary or failover)
  double none_kept = 0;   // share whose new set holds no server of the old one (every copy cold)
  std::vector<ReplicaServerShare> servers;
};

struct ReplicaOptions {
  uint32_t samples = uint32_t{1} << 20;
  uint64_t max_exact_residues = uint64_t{1} << 22;
  // Rendezvous costs O(servers) per set: samples are cut to about this many server evaluations
  // per side (at least 2^16 samples), so a 1,000-server what-if stays well under a second.
  uint64_t max_sample_work = uint64_t{1} << 27;
  bool exact = true;  // false: sample even where exact counting applies (to cross-check it)
};

// The replica-set plan for changing from `before` to `after` (ids as for planMigration).
ReplicaPlan planReplicaSets(const Router& before, std::span<const std::string> before_ids,
                            const Router& after, std::span<const std::string> after_ids,
                            const ReplicaOptions& options = {});

}  // namespace mcring::routing
