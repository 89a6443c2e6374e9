# Dalli (Debian's ruby-dalli, 3.0: the binary protocol): one call of each kind, results as JSON.
# Usage: ruby binary_dalli.rb PORT. Run against memcached and against mcring; outputs must match.
require 'dalli'
require 'json'

port = ARGV[0].to_i
dc = Dalli::Client.new("127.0.0.1:#{port}", socket_timeout: 3, serializer: Marshal,
                       compress: false, value_max_bytes: 4 * 1024 * 1024)
out = []
rec = lambda do |label, &blk|
  begin
    v = blk.call
  rescue Dalli::DalliError => e
    v = "error:#{e.class}"
  end
  out << [label, v]
end
big = 'x' * 500_000
rec.call('set') { dc.set('a', 'one') ? true : false }
rec.call('get') { dc.get('a') }
rec.call('get miss') { dc.get('missing') }
rec.call('set raw') { dc.set('r', 'raw', 0, raw: true) ? true : false }
rec.call('get raw') { dc.get('r') }
20.times { |i| dc.set("m#{i}", "v#{i}") }
rec.call('get multi') { dc.get_multi((0...25).map { |i| "m#{i}" }).sort.to_h }
rec.call('add exists') { dc.add('a', 'x') ? true : false }
rec.call('add new') { dc.add('b', 'two', 0, raw: true) ? true : false }
rec.call('replace miss') { dc.replace('nope', 'x') ? true : false }
rec.call('replace hit') { dc.replace('b', 'three', 0, raw: true) ? true : false }
rec.call('append') { dc.append('b', '+') ? true : false }
rec.call('prepend') { dc.prepend('b', '-') ? true : false }
rec.call('get b') { dc.get('b') }
rec.call('append miss') { dc.append('nope', '+') ? true : false }
rec.call('cas ok') { dc.cas('a') { |v| v + '-cas' } ? true : false }
rec.call('get after cas') { dc.get('a') }
v, cas = dc.get_cas('a')
dc.set('a', 'changed')
rec.call('cas conflict') { dc.set_cas('a', 'cas2', cas) ? true : false }
rec.call('cas miss') { dc.cas('nope') { |x| x } }
rec.call('delete hit') { dc.delete('a') ? true : false }
rec.call('delete miss') { dc.delete('a') ? true : false }
rec.call('incr initial') { dc.incr('n', 5, 0, 100) }
rec.call('incr') { dc.incr('n', 5) }
rec.call('decr initial') { dc.decr('d', 5, 0, 7) }
rec.call('decr') { dc.decr('d', 50) }
rec.call('incr no initial') { dc.incr('nn', 1) }
rec.call('touch hit') { dc.touch('b', 100) ? true : false }
rec.call('touch miss') { dc.touch('nope', 100) ? true : false }
rec.call('set big') { dc.set('big', big) ? true : false }
rec.call('get big') { dc.get('big') == big }
rec.call('set too big') { dc.set('huge', 'y' * (2 * 1024 * 1024), 0, raw: true) ? true : false }
rec.call('stats has pid') { dc.stats.values.all? { |s| s && s.key?('pid') } }
rec.call('version') { dc.version.values }
rec.call('flush') { dc.flush ? true : false }
rec.call('get after flush') { dc.get('b') }
puts JSON.pretty_generate(out)
