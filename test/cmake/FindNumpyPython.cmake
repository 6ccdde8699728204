# Picks a Python 3 that can import numpy (the reference scripts need it).
# On a machine where `python3` on PATH is a pyenv or venv interpreter without
# numpy, Debian's /usr/bin/python3 (with python3-numpy from
# scripts/setup.sh) is used.
if(NOT SINTER_PYTHON)
  find_program(_sinter_path_python python3)
  foreach(candidate ${_sinter_path_python} /usr/bin/python3)
    if(candidate)
      execute_process(COMMAND ${candidate} -c "import numpy"
                      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(SINTER_PYTHON ${candidate} CACHE FILEPATH "Python 3 with numpy")
        break()
      endif()
    endif()
  endforeach()
endif()
if(NOT SINTER_PYTHON)
  message(FATAL_ERROR "No python3 with numpy found; run scripts/setup.sh")
endif()
message(STATUS "Test python: ${SINTER_PYTHON}")
