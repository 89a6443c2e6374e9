# Dalli (Debian's ruby-dalli 3.0, binary protocol), one mcring as its one server: runs the steps
# given and prints each result as JSON. Usage: ruby unavailable_dalli.rb PORT STEP...
# A step is get:KEY or multi:KEY,KEY,...; a result is the value (nil: a miss), a multi-get's
# {key: value}, or "error:<class>". Values are read raw (set by another client as plain bytes).
require 'dalli'
require 'json'

port = ARGV[0].to_i
dc = Dalli::Client.new("127.0.0.1:#{port}", socket_timeout: 1, serializer: nil, raw: true,
                       compress: false)
out = []
ARGV[1..].each do |step|
  op, arg = step.split(':', 2)
  begin
    v = op == 'get' ? dc.get(arg) : dc.get_multi(*arg.split(',')).sort.to_h
  rescue Dalli::DalliError => e
    v = "error:#{e.class}"
  end
  out << [step, v]
end
puts JSON.generate(out)
