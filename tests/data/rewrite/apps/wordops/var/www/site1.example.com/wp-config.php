<?php
// A second site on the same server over TCP; its prefix has no trailing ':'.
define( 'DB_NAME', 'site1' );
define( 'DB_USER', 'site1' );
define( 'DB_PASSWORD', 'site1-db' );
define( 'DB_HOST', 'localhost' );
$table_prefix = 'wp_';
define( 'WP_REDIS_HOST', '127.0.0.1' );
define( 'WP_REDIS_PORT', 6379 );
define( 'WP_REDIS_PREFIX', 'site1' );
define( 'WP_REDIS_SERVERS', [ 'tcp://127.0.0.1:6379?database=0&alias=primary' ] );
if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}
require_once ABSPATH . 'wp-settings.php';
