require "active_support/core_ext/integer/time"

Rails.application.configure do
  config.cache_classes = true
  config.eager_load = true

  # Redis cache store on the local server, database 0.
  config.cache_store = :redis_cache_store, {
    url: ENV.fetch("REDIS_CACHE_URL", "redis://127.0.0.1:6379/0"),
    password: "rails-redis-secret",
    expires_in: 90.minutes
  }
end
