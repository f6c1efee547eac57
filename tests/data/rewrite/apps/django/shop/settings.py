"""Django settings of a shop: cache, sessions, Celery and Channels on the local Redis."""

import os

DEBUG = False
ALLOWED_HOSTS = ["shop.example.com"]

# Django's own Redis cache (redis-py URLs); a second, remote server is never touched.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": [
            "redis://:django-redis-secret@127.0.0.1:6379/0",
            "redis://10.0.0.7:6379/0",
        ],
        "KEY_PREFIX": "shop",
    },
    "sessions": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": "unix:///run/redis/redis-server.sock?db=1",
        "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"},
    },
}
SESSION_ENGINE = "django.contrib.sessions.backends.cache"
SESSION_CACHE_ALIAS = "sessions"

# Celery (kombu): a socket is reached as redis+socket://
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/2")
CELERY_RESULT_BACKEND = "redis+socket:///run/redis/redis-server.sock"

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": ["redis://127.0.0.1:6379/3"]},
    },
}
# An example left as a comment stays as it is: redis://127.0.0.1:6379/9
