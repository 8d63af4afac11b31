# bertc_add_model(NAME SOURCES...): a model program, like a Halide generator.
#
# The sources define a model with BERTC_MODEL(...) (frontend/model.h); the result is an
# executable with the subcommands of `bertc` (compile, info, ...) for that model:
#   bertc_add_model(my-bert my_bert.cpp)
#   ./my-bert compile my-bert.toml --emit stats
# Works in bertc's own tree and, after find_package(bertc), in any other CMake project.
function(bertc_add_model name)
  if(NOT ARGN)
    message(FATAL_ERROR "bertc_add_model(${name}): give the model definition's source files")
  endif()
  add_executable(${name} ${ARGN})
  target_compile_features(${name} PRIVATE cxx_std_20)
  target_link_libraries(${name} PRIVATE bertc::driver_main)
endfunction()
