<?php
// A third site whose prefix starts with the second site's prefix.
define( 'DB_NAME', 'site10' );
define( 'DB_USER', 'site10' );
define( 'DB_PASSWORD', 'site10-db' );
define( 'DB_HOST', 'localhost' );
$table_prefix = 'wp_';
define( "WP_REDIS_PREFIX", "site10" );
if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}
require_once ABSPATH . 'wp-settings.php';
