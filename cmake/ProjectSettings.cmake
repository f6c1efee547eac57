# Shared compile settings: every first-party target links keyshift_settings PRIVATE.
add_library(keyshift_settings INTERFACE)
target_compile_options(keyshift_settings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(KEYSHIFT_WARNINGS_AS_ERRORS)
  target_compile_options(keyshift_settings INTERFACE -Werror)
endif()
if(KEYSHIFT_SANITIZE)
  target_compile_options(keyshift_settings INTERFACE -fsanitize=address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(keyshift_settings INTERFACE -fsanitize=address,undefined)
endif()
target_include_directories(keyshift_settings INTERFACE ${PROJECT_SOURCE_DIR})
target_compile_definitions(keyshift_settings INTERFACE
                           KEYSHIFT_VERSION="${PROJECT_VERSION}")
