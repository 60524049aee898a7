# vulkan.cmake - the Vulkan backend (src/backend/vulkan/): the compute
# shaders (shaders/*.comp) compiled to SPIR-V with glslc at build time, plain
# and with subgroup arithmetic (-DENC_SUBGROUP), then embedded into the
# library as one generated C file (cmake/embed_spirv.cmake). Included from
# the top-level CMakeLists.txt when ENCORE_VULKAN is on.
file(GLOB ENCORE_SHADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/*.comp)
set(ENCORE_SPV_DIR ${PROJECT_BINARY_DIR}/shaders)
file(MAKE_DIRECTORY ${ENCORE_SPV_DIR})
set(spv_files "")
set(shader_names "")
foreach(comp ${ENCORE_SHADERS})
  get_filename_component(name ${comp} NAME_WE)
  list(APPEND shader_names ${name})
  foreach(variant plain sg)
    if(variant STREQUAL "sg")
      set(spv ${ENCORE_SPV_DIR}/${name}.sg.spv)
      set(defs -DENC_SUBGROUP)
    else()
      set(spv ${ENCORE_SPV_DIR}/${name}.spv)
      set(defs "")
    endif()
    # vulkan1.1 (SPIR-V 1.3): below SPIR-V 1.6 a shader's gl_SubgroupSize
    # is the device's reported subgroup size, which attention.comp's
    # specialization relies on.
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${ENCORE_GLSLC} --target-env=vulkan1.1 -O -Werror ${defs} -o ${spv} ${comp}
      DEPENDS ${comp} ${PROJECT_SOURCE_DIR}/shaders/common.glsl ${PROJECT_SOURCE_DIR}/shaders/quant.glsl
      COMMENT "glslc ${name}.comp (${variant})")
    list(APPEND spv_files ${spv})
  endforeach()
endforeach()
set(ENCORE_SHADERS_C ${ENCORE_SPV_DIR}/vk_shaders_gen.c)
string(REPLACE ";" "," shader_names "${shader_names}") # a ';' would split the command line
add_custom_command(
  OUTPUT ${ENCORE_SHADERS_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${ENCORE_SHADERS_C} -DSPV_DIR=${ENCORE_SPV_DIR}
          "-DNAMES=${shader_names}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
  DEPENDS ${spv_files} ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
  COMMENT "Embedding the SPIR-V shaders")
target_sources(encore_core PRIVATE ${ENCORE_SHADERS_C})
target_link_libraries(encore_core PUBLIC Vulkan::Vulkan)
target_compile_definitions(encore_core PUBLIC ENCORE_HAVE_VULKAN=1)
