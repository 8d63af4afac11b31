# bertc_stage_library(): one static library per folder, with its headers installed.
#
#   bertc_stage_library(ir DEPENDS ${BERTC_FMT})
# creates target bertc_ir (alias bertc::ir) from every .cpp of the folder (a new file pair needs
# no edit here; CONFIGURE_DEPENDS re-globs at build time), or from SOURCES when given (a folder
# holding several libraries); EXTRA_SOURCES adds generated files. Sources include each other as
# "ir/x.h", which resolves against the source root when building and against include/bertc when
# installed.
function(bertc_stage_library stage)
  cmake_parse_arguments(ARG "" "" "SOURCES;EXTRA_SOURCES;DEPENDS;PRIVATE_DEPENDS" ${ARGN})
  if(ARG_SOURCES)
    list(TRANSFORM ARG_SOURCES PREPEND "${CMAKE_CURRENT_SOURCE_DIR}/")
  else()
    file(GLOB ARG_SOURCES CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.cpp")
  endif()
  set(target bertc_${stage})
  add_library(${target} STATIC ${ARG_SOURCES} ${ARG_EXTRA_SOURCES})
  add_library(bertc::${stage} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${stage})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/bertc>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE_DEPENDS})
  target_compile_features(${target} PUBLIC cxx_std_20)
  # Absolute source list, for test builds that recompile a stage with sanitizers.
  set_property(GLOBAL PROPERTY BERTC_${stage}_SOURCES ${ARG_SOURCES})
  # Headers install under their path in the tree, matching the "folder/x.h" include spelling.
  file(RELATIVE_PATH folder "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  file(GLOB headers CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.h" "${CMAKE_CURRENT_SOURCE_DIR}/*.def")
  install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/bertc/${folder})
  install(TARGETS ${target} EXPORT bertcTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()
