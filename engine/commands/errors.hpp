#pragma once

#include <string_view>

namespace keyshift::engine::errors {

// Error replies exactly as Valkey 8 words them (without the leading '-').
inline constexpr std::string_view k_syntax = "ERR syntax error";
inline constexpr std::string_view k_wrong_type =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view k_not_integer = "ERR value is not an integer or out of range";
inline constexpr std::string_view k_not_float = "ERR value is not a valid float";
inline constexpr std::string_view k_overflow = "ERR increment or decrement would overflow";
inline constexpr std::string_view k_incr_float_nan = "ERR increment would produce NaN or Infinity";
inline constexpr std::string_view k_no_such_key = "ERR no such key";
inline constexpr std::string_view k_out_of_range = "ERR index out of range";
inline constexpr std::string_view k_same_object = "ERR source and destination objects are the same";
inline constexpr std::string_view k_db_index_out_of_range = "ERR DB index is out of range";
inline constexpr std::string_view k_invalid_db_index = "ERR invalid DB index";
inline constexpr std::string_view k_noauth = "NOAUTH Authentication required.";
inline constexpr std::string_view k_wrongpass =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr std::string_view k_auth_no_password =
    "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?";
inline constexpr std::string_view k_oom = "OOM command not allowed when used memory > 'maxmemory'.";
/// A write refused while fewer replicas than min-replicas-to-write are in reach.
inline constexpr std::string_view k_noreplicas = "NOREPLICAS Not enough good replicas to write.";
inline constexpr std::string_view k_misconf_bgsave =
    "MISCONF Valkey is configured to save RDB snapshots, but it's currently unable to persist "
    "to disk. Commands that may modify the data set are disabled, because this instance is "
    "configured to report errors during writes if RDB snapshotting fails "
    "(stop-writes-on-bgsave-error option). Please check the Valkey logs for details about the "
    "RDB error.";
inline constexpr std::string_view k_busykey = "BUSYKEY Target key name already exists.";
inline constexpr std::string_view k_noproto = "NOPROTO unsupported protocol version";
inline constexpr std::string_view k_string_too_long =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr std::string_view k_offset_out_of_range = "ERR offset is out of range";
inline constexpr std::string_view k_invalid_expire_prefix = "ERR invalid expire time in '";
inline constexpr std::string_view k_timeout_negative = "ERR timeout is negative";
inline constexpr std::string_view k_timeout_not_float =
    "ERR timeout is not a float or out of range";
inline constexpr std::string_view k_cursor_invalid = "ERR invalid cursor";
inline constexpr std::string_view k_nx_xx_gt_lt =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
inline constexpr std::string_view k_gt_lt_nx =
    "ERR GT, LT, and/or NX options at the same time are not compatible";
inline constexpr std::string_view k_module_not_allowed =
    "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";
inline constexpr std::string_view k_debug_not_allowed =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";
inline constexpr std::string_view k_multi_not_allowed =
    "ERR Command not allowed inside a transaction";
inline constexpr std::string_view k_execabort =
    "EXECABORT Transaction discarded because of previous errors.";
inline constexpr std::string_view k_gt_and_lt =
    "ERR GT and LT options at the same time are not compatible";
inline constexpr std::string_view k_unsupported_option_prefix = "ERR Unsupported option ";
inline constexpr std::string_view k_unknown_type_name_prefix = "ERR unknown type name '";
inline constexpr std::string_view k_novalues_hscan_only =
    "ERR NOVALUES option can only be used in HSCAN";
inline constexpr std::string_view k_noscores_zscan_only =
    "ERR NOSCORES option can only be used in ZSCAN";
inline constexpr std::string_view k_int_out_of_range =
    "ERR value is out of range, value must between -2147483648 and 2147483647";
inline constexpr std::string_view k_invalid_first_db_index = "ERR invalid first DB index";
inline constexpr std::string_view k_invalid_second_db_index = "ERR invalid second DB index";
inline constexpr std::string_view k_lfu_selected =
    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
    "switching between policies at runtime LRU and LFU data will take some time to adjust.";
inline constexpr std::string_view k_lfu_not_selected =
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time to "
    "adjust.";
inline constexpr std::string_view k_lcs_not_strings =
    "ERR The specified keys must contain string values";
inline constexpr std::string_view k_lcs_len_and_idx =
    "ERR If you want both the length and indexes, please just use IDX.";
inline constexpr std::string_view k_lcs_too_long = "ERR String too long for LCS";
inline constexpr std::string_view k_lcs_over_bulk_len =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
inline constexpr std::string_view k_lcs_alloc_failed =
    "ERR Insufficient memory, failed allocating transient memory for LCS";

// Server family (INFO, CONFIG, COMMAND, CLIENT, DEBUG, MEMORY, SLOWLOG, SHUTDOWN, ...).
inline constexpr std::string_view k_no_config_file =
    "ERR The server is running without a config file";
inline constexpr std::string_view k_rewriting_config_prefix = "ERR Rewriting config file: ";
inline constexpr std::string_view k_invalid_command_specified = "ERR Invalid command specified";
inline constexpr std::string_view k_invalid_command_arg_count =
    "ERR Invalid number of arguments specified for command";
inline constexpr std::string_view k_command_has_no_keys = "ERR The command has no key arguments";
inline constexpr std::string_view k_invalid_command_arguments =
    "ERR Invalid arguments specified for command";
inline constexpr std::string_view k_client_name_invalid =
    "ERR Client names cannot contain spaces, newlines or special characters.";
inline constexpr std::string_view k_no_such_client = "ERR No such client";
inline constexpr std::string_view k_invalid_client_id = "ERR Invalid client ID";
inline constexpr std::string_view k_client_id_positive = "ERR client-id should be greater than 0";
inline constexpr std::string_view k_maxage_not_integer =
    "ERR maxage is not an integer or out of range";
inline constexpr std::string_view k_maxage_positive = "ERR maxage should be greater than 0";
inline constexpr std::string_view k_unblock_reason =
    "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR";
inline constexpr std::string_view k_unknown_client_type_prefix = "ERR Unknown client type '";
inline constexpr std::string_view k_no_such_user_prefix = "ERR No such user '";
inline constexpr std::string_view k_unrecognized_option_prefix = "ERR Unrecognized option '";
inline constexpr std::string_view k_attr_invalid_suffix =
    " cannot contain spaces, newlines or special characters.";
inline constexpr std::string_view k_slowlog_count =
    "ERR count should be greater than or equal to -1";
inline constexpr std::string_view k_no_shutdown_in_progress = "ERR No shutdown in progress.";
inline constexpr std::string_view k_no_latency_samples_prefix =
    "ERR No samples available for event '";
inline constexpr std::string_view k_must_be_positive =
    "ERR value is out of range, must be positive";
inline constexpr std::string_view k_debug_protocol_type =
    "ERR Wrong protocol type name. Please use one of the following: "
    "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false";
inline constexpr std::string_view k_resp2_not_supported =
    "ERR RESP2 is not supported by this command";

// Set family and SORT.
inline constexpr std::string_view k_sintercard_numkeys = "ERR numkeys should be greater than 0";
inline constexpr std::string_view k_numkeys_exceeds_args =
    "ERR Number of keys can't be greater than number of args";
inline constexpr std::string_view k_sintercard_limit_negative = "ERR LIMIT can't be negative";
// SRANDMEMBER's count limits (Valkey's getRangeLongFromObjectOrReply with -LONG_MAX..LONG_MAX).
inline constexpr std::string_view k_srandmember_count_range =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
inline constexpr std::string_view k_sort_not_double =
    "ERR One or more scores can't be converted into double";

// Transactions, pub/sub and blocking commands.
inline constexpr std::string_view k_exec_without_multi = "ERR EXEC without MULTI";
inline constexpr std::string_view k_discard_without_multi = "ERR DISCARD without MULTI";
inline constexpr std::string_view k_execabort_because_prefix =
    "EXECABORT Transaction discarded because of: ";
/// The code of errors without one of their own; EXECABORT's quoted reason drops it.
inline constexpr std::string_view k_generic_error_code = "ERR ";
inline constexpr std::string_view k_timeout_out_of_range = "ERR timeout is out of range";
inline constexpr std::string_view k_unblocked_via_client_unblock =
    "UNBLOCKED client unblocked via CLIENT UNBLOCK";
inline constexpr std::string_view k_pubsub_context_suffix =
    "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context";
inline constexpr std::string_view k_ssubscribe_deny_blocking =
    "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client";
inline constexpr std::string_view k_numkeys_positive = "ERR numkeys should be greater than 0";
inline constexpr std::string_view k_count_positive = "ERR count should be greater than 0";

// List family.
inline constexpr std::string_view k_lpos_rank_zero =
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "
    "negative to start from the end of the list";
inline constexpr std::string_view k_lpos_count_negative = "ERR COUNT can't be negative";
inline constexpr std::string_view k_lpos_maxlen_negative = "ERR MAXLEN can't be negative";
inline constexpr std::string_view k_lmpop_numkeys = "ERR numkeys should be greater than 0";
inline constexpr std::string_view k_lmpop_count = "ERR count should be greater than 0";
// LREM count and LPOS RANK limits (Valkey's getRangeLongFromObjectOrReply, -LONG_MAX..LONG_MAX).
inline constexpr std::string_view k_list_long_range =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

// Hash family.
inline constexpr std::string_view k_hash_not_integer = "ERR hash value is not an integer";
inline constexpr std::string_view k_hash_not_float = "ERR hash value is not a float";
inline constexpr std::string_view k_value_nan_or_inf = "ERR value is NaN or Infinity";
inline constexpr std::string_view k_value_out_of_range = "ERR value is out of range";
// HRANDFIELD's count limits (Valkey's getRangeLongFromObjectOrReply with -LONG_MAX..LONG_MAX).
inline constexpr std::string_view k_hrandfield_count_range =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
// Hash field expiry (HEXPIRE & co.), worded as Redis 7.4 (Valkey 8.0 has no such commands).
inline constexpr std::string_view k_hfe_fields_missing =
    "ERR Mandatory argument FIELDS is missing or not at the right position";
inline constexpr std::string_view k_hfe_numfields_positive =
    "ERR Parameter `numFields` should be greater than 0";
inline constexpr std::string_view k_hfe_numfields_mismatch =
    "ERR The `numfields` parameter must match the number of arguments";
// HTTL/HPTTL/HEXPIRETIME/HPEXPIRETIME/HPERSIST word a bad count differently from HEXPIRE.
inline constexpr std::string_view k_hfe_fields_count_positive =
    "ERR Number of fields must be a positive integer";
inline constexpr std::string_view k_hfe_expire_negative = "ERR invalid expire time, must be >= 0";

// Sorted-set family.
inline constexpr std::string_view k_zadd_xx_nx =
    "ERR XX and NX options at the same time are not compatible";
inline constexpr std::string_view k_zadd_incr_single =
    "ERR INCR option supports a single increment-element pair";
inline constexpr std::string_view k_zadd_nan = "ERR resulting score is not a number (NaN)";
inline constexpr std::string_view k_zrange_not_float = "ERR min or max is not a float";
inline constexpr std::string_view k_zrange_not_lex = "ERR min or max not valid string range item";
inline constexpr std::string_view k_zrange_limit_needs_by =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
inline constexpr std::string_view k_zrange_withscores_bylex =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";
inline constexpr std::string_view k_zmpop_numkeys = "ERR numkeys should be greater than 0";
inline constexpr std::string_view k_zmpop_count = "ERR count should be greater than 0";
inline constexpr std::string_view k_zrandmember_count_range =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
inline constexpr std::string_view k_zrandmember_out_of_range = "ERR value is out of range";
// Followed by the command's name and "' command".
inline constexpr std::string_view k_zsetop_no_keys_prefix =
    "ERR at least 1 input key is needed for '";
inline constexpr std::string_view k_zsetop_weight_not_float = "ERR weight value is not a float";
inline constexpr std::string_view k_zintercard_limit_negative = "ERR LIMIT can't be negative";

// Persistence: SAVE, BGSAVE, DUMP, RESTORE.
// Valkey's shared.err: the bare error a failed save inside DEBUG RELOAD replies.
inline constexpr std::string_view k_generic_err = "ERR";
inline constexpr std::string_view k_debug_reload_options =
    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.";
inline constexpr std::string_view k_debug_reload_failed =
    "ERR Error trying to load the RDB dump, check server logs.";
inline constexpr std::string_view k_shutdown_errors = "ERR Errors trying to SHUTDOWN. Check logs.";
inline constexpr std::string_view k_bgsave_in_progress = "ERR Background save already in progress";
inline constexpr std::string_view k_bgsave_aof_child =
    "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in "
    "order to schedule a BGSAVE whenever possible.";
inline constexpr std::string_view k_aof_config_set_failed =
    "ERR CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. "
    "Check server logs.";
inline constexpr std::string_view k_restore_bad_payload =
    "ERR DUMP payload version or checksum are wrong";
inline constexpr std::string_view k_restore_bad_format = "ERR Bad data format";
inline constexpr std::string_view k_restore_ttl_negative = "ERR Invalid TTL value, must be >= 0";
inline constexpr std::string_view k_restore_idletime = "ERR Invalid IDLETIME value, must be >= 0";
inline constexpr std::string_view k_restore_freq =
    "ERR Invalid FREQ value, must be >= 0 and <= 255";
inline constexpr std::string_view k_cluster_disabled =
    "ERR This instance has cluster support disabled";

// Replicas (src/server.c processCommand; src/replication.c replicaofCommand).
inline constexpr std::string_view k_readonly_replica =
    "READONLY You can't write against a read only replica.";
inline constexpr std::string_view k_loading = "LOADING Valkey is loading the dataset in memory";

// WAIT / WAITAOF (src/replication.c waitCommand, waitaofCommand; src/timeout.c).
inline constexpr std::string_view k_timeout_not_integer =
    "ERR timeout is not an integer or out of range";
/// SYNC/PSYNC to a replica whose own link is down (Valkey's text).
inline constexpr std::string_view k_sync_not_connected =
    "NOMASTERLINK Can't SYNC while not connected with my master";
inline constexpr std::string_view k_sync_pending_output =
    "ERR SYNC and PSYNC are invalid with pending output";
inline constexpr std::string_view k_wait_on_replica =
    "ERR WAIT cannot be used with replica instances. Please also note that if a replica is "
    "configured to be writable (which is not the default) writes to replicas are just local "
    "and are not propagated.";
inline constexpr std::string_view k_waitaof_on_replica =
    "ERR WAITAOF cannot be used with replica instances. Please also note that writes to "
    "replicas are just local and are not propagated.";
inline constexpr std::string_view k_waitaof_appendonly_disabled =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

// --- Geo -------------------------------------------------------------------------------
inline constexpr std::string_view k_geo_bad_unit =
    "ERR unsupported unit provided. please use M, KM, FT, MI";
/// Followed by the pair as "%f,%f".
inline constexpr std::string_view k_geo_bad_pair_prefix = "ERR invalid longitude,latitude pair ";
inline constexpr std::string_view k_geo_need_radius = "ERR need numeric radius";
inline constexpr std::string_view k_geo_negative_radius = "ERR radius cannot be negative";
inline constexpr std::string_view k_geo_need_width = "ERR need numeric width";
inline constexpr std::string_view k_geo_need_height = "ERR need numeric height";
inline constexpr std::string_view k_geo_negative_box = "ERR height or width cannot be negative";
inline constexpr std::string_view k_geo_bad_member = "ERR could not decode requested zset member";
inline constexpr std::string_view k_geo_count_positive = "ERR COUNT must be > 0";
inline constexpr std::string_view k_geo_any_needs_count =
    "ERR the ANY argument requires COUNT argument";
inline constexpr std::string_view k_geo_store_with_options =
    "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD "
    "options";
inline constexpr std::string_view k_geosearchstore_with_options =
    "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options";
/// Followed by the command name as the client typed it.
inline constexpr std::string_view k_geo_need_from_prefix =
    "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for ";
/// Followed by the command name as the client typed it.
inline constexpr std::string_view k_geo_need_by_prefix =
    "ERR exactly one of BYRADIUS and BYBOX can be specified for ";

// CLIENT TRACKING, CLIENT CACHING and CLIENT PAUSE (Valkey's networking.c).
inline constexpr std::string_view k_tracking_single_redirect =
    "ERR A client can only redirect to a single other client";
inline constexpr std::string_view k_tracking_redirect_missing =
    "ERR The client ID you want redirect to does not exist";
inline constexpr std::string_view k_tracking_prefix_needs_bcast =
    "ERR PREFIX option requires BCAST mode to be enabled";
inline constexpr std::string_view k_tracking_bcast_switch =
    "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
    "then re-enabling it with a different mode.";
inline constexpr std::string_view k_tracking_optin_bcast =
    "ERR OPTIN and OPTOUT are not compatible with BCAST";
inline constexpr std::string_view k_tracking_optin_optout =
    "ERR You can't specify both OPTIN mode and OPTOUT mode";
inline constexpr std::string_view k_tracking_optin_switch =
    "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
    "then re-enabling it with a different mode.";
inline constexpr std::string_view k_caching_not_tracking =
    "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
    "OPTOUT mode enabled";
inline constexpr std::string_view k_caching_yes_needs_optin =
    "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.";
inline constexpr std::string_view k_caching_no_needs_optout =
    "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.";
inline constexpr std::string_view k_pause_mode = "ERR CLIENT PAUSE mode must be WRITE or ALL";
inline constexpr std::string_view k_function_flush_mode =
    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option";
// FUNCTION RESTORE (APPEND) of a library that exists: the name comes unquoted between these,
// unlike FUNCTION LOAD's "Library 'name' already exists".
inline constexpr std::string_view k_restore_library_exists_prefix = "ERR Library ";
inline constexpr std::string_view k_restore_library_exists_suffix = " already exists";

// Config file errors of `rename-command` (loadServerConfigFromString), printed under the
// FATAL CONFIG FILE ERROR banner.
inline constexpr std::string_view k_rename_no_such_command = "No such command in rename-command";
inline constexpr std::string_view k_rename_target_exists = "Target command name already exists";

}  // namespace keyshift::engine::errors
