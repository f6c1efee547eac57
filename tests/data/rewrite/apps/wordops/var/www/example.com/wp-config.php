<?php
/**
 * The base configuration for WordPress, as `wo site create example.com --wpredis` leaves it,
 * with Redis Object Cache moved to the unix socket by the admin.
 */

// ** Database settings - You can get this info from your web host ** //
define( 'DB_NAME', 'example_com_x2Ab' );
define( 'DB_USER', 'examplecom1Kx' );
define( 'DB_PASSWORD', 'Zq8vT3nLw0pRk2sB' );
define( 'DB_HOST', 'localhost' );
define( 'DB_CHARSET', 'utf8mb4' );
define( 'DB_COLLATE', '' );

define( 'AUTH_KEY',         'put your unique phrase here' );
define( 'SECURE_AUTH_KEY',  'put your unique phrase here' );

$table_prefix = 'wp_';

define( 'WP_DEBUG', false );

/** Redis Object Cache */
define( 'WP_REDIS_SCHEME', 'unix' );
define( 'WP_REDIS_PATH', '/run/redis/redis-server.sock' );
define( 'WP_REDIS_DATABASE', 0 );
define( 'WP_REDIS_PASSWORD', 'wp-redis-secret' );
define( 'WP_REDIS_PREFIX', 'example.com:' );
define( 'WP_REDIS_TIMEOUT', 1 );
define( 'WP_REDIS_READ_TIMEOUT', 1 );
define( 'WP_REDIS_DISABLE_BANNERS', true );
define( 'WP_CACHE_KEY_SALT', 'example.com:' );
define( 'RT_WP_NGINX_HELPER_REDIS_HOSTNAME', '127.0.0.1' );
define( 'RT_WP_NGINX_HELPER_REDIS_PORT', '6379' );
define( 'RT_WP_NGINX_HELPER_REDIS_PREFIX', 'nginx-cache:' );

/* That's all, stop editing! Happy publishing. */

/** Absolute path to the WordPress directory. */
if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}

/** Sets up WordPress vars and included files. */
require_once ABSPATH . 'wp-settings.php';
