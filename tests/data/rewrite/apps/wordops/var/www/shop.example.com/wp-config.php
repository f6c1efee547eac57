<?php
/**
 * A WooCommerce site with Redis Object Cache using an ACL user and Predis replication.
 */
define( 'DB_NAME', 'shop' );
define( 'DB_USER', 'shop' );
define( 'DB_PASSWORD', 'shop-db-pass' );
define( 'DB_HOST', 'localhost' );

define( 'WP_REDIS_CLIENT', 'predis' );
define( 'WP_REDIS_HOST', '127.0.0.1' );
define( 'WP_REDIS_PORT', 6379 );
define( 'WP_REDIS_PASSWORD', [ 'shop', 'shop-acl-secret' ] );
define( 'WP_REDIS_DATABASE', 0 );
define( 'WP_REDIS_PREFIX', 'shop.example.com:' );
define( 'WP_REDIS_SERVERS', [
    'tcp://127.0.0.1:6379?database=0&role=master&alias=primary',
    'tcp://10.0.0.8:6379?database=0&alias=replica-01',
] );
define( 'WP_REDIS_MAXTTL', 86400 );
define( 'WP_CACHE_KEY_SALT', 'shop.example.com:' );

$table_prefix = 'wp_';

if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}
require_once ABSPATH . 'wp-settings.php';
