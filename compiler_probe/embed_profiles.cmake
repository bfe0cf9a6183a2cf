# Writes every given file (rules profiles' JSON, the HTML report's template) as a {name without extension, raw string} initializer.
set(content "")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} text)
  string(APPEND content "{\"${name}\", R\"opprobe_profile(${text})opprobe_profile\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "${content}")
file(RENAME ${OUT}.tmp ${OUT})
