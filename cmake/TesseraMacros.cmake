# Libraries link the shared libMLIR/libLLVM so that every tool shares one copy
# of each registry (never static archives mixed with the dylib). LINK names
# Tessera libraries only: an MLIR component target there (MLIRMemRefDialect
# ...) is a static archive, and once it precedes the dylib on the link line
# the tools get a second, static copy of MLIR's core (an ASan round caught
# it as use-after-poison in MLIRContext's constructor).
function(tessera_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  llvm_update_compile_flags(${name})
  # Upstream MLIR headers parsed once (lib/PrecompiledHeaders.h), by every
  # library compiled with the precompile's flags: not the one that talks to
  # libonnx with exceptions and RTTI.
  if(NOT LLVM_REQUIRES_EH AND NOT LLVM_REQUIRES_RTTI)
    target_precompile_headers(${name} REUSE_FROM TesseraPrecompiledHeaders)
  endif()
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK} MLIR LLVM)
endfunction()

function(tessera_add_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK" ${ARGN})
  add_llvm_executable(${name} ${ARG_SOURCES})
  llvm_update_compile_flags(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LINK} MLIR LLVM)
  # --version (tessera/Version.h).
  target_compile_definitions(${name} PRIVATE
    TESSERA_VERSION="${CMAKE_PROJECT_VERSION}")
endfunction()
