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

# Each library sees only the folders of its own floor and the floors below it
# (cli -> migrate -> compat -> engine): an include that crosses upward does not compile.
# Includes name folders from the root ("engine/util/clock.hpp"), so each floor gets a
# directory in the build tree holding one link to its source folder, and a target's include
# path lists the directories of the floors it may see.
function(keyshift_floor_include target scope floor)
  set(dir ${PROJECT_BINARY_DIR}/floors/${floor})
  if(NOT EXISTS ${dir}/${floor})
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${floor} ${dir}/${floor} SYMBOLIC)
  endif()
  target_include_directories(${target} ${scope} ${dir})
endfunction()
target_compile_definitions(keyshift_settings INTERFACE
                           KEYSHIFT_VERSION="${PROJECT_VERSION}")
