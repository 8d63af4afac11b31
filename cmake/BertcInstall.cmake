# cmake --install: headers (per library), static libraries, tools, and the bertc CMake package.
include(CMakePackageConfigHelpers)
set(BERTC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/bertc)
install(EXPORT bertcTargets NAMESPACE bertc:: DESTINATION ${BERTC_CMAKE_DIR})
configure_package_config_file(cmake/bertcConfig.cmake.in ${PROJECT_BINARY_DIR}/bertcConfig.cmake
  INSTALL_DESTINATION ${BERTC_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/bertcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/bertcConfig.cmake ${PROJECT_BINARY_DIR}/bertcConfigVersion.cmake
  cmake/BertcAddModel.cmake DESTINATION ${BERTC_CMAKE_DIR})
