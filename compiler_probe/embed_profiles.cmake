# Writes every profile JSON as a {name, raw string} initializer for compiler_probe/rules/rules_backend.cpp.
set(content "")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} text)
  string(APPEND content "{\"${name}\", R\"opprobe_profile(${text})opprobe_profile\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "${content}")
file(RENAME ${OUT}.tmp ${OUT})
