# Sidekiq 7 (redis-client): only redis:// and rediss:// URLs; a socket goes in path:.
Sidekiq.configure_server do |config|
  config.redis = { url: ENV.fetch("SIDEKIQ_REDIS_URL", "redis://:rails-redis-secret@127.0.0.1:6379/5") }
end

Sidekiq.configure_client do |config|
  config.redis = { url: ENV.fetch("SIDEKIQ_REDIS_URL", "redis://:rails-redis-secret@127.0.0.1:6379/5") }
end
