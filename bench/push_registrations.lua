-- wrk script: POST push_registrations with a token no other request uses.
local threads = 0
function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

local counter = 0
local run = tostring(os.time())
request = function()
  counter = counter + 1
  local body = "token=" .. run .. "t" .. thread_id .. "n" .. counter ..
      "&operating_system=ios&locale=es-MX&test_device=false"
  return wrk.format("POST", "/api/v2/regions/1/push_registrations",
      { ["Content-Type"] = "application/x-www-form-urlencoded" }, body)
end
