/* OpenCV 4 has no C API; this module exists to carry pkg-config's opencv4 flags
   (include path, libraries) to the CShims target that wraps OpenCV in C. */
