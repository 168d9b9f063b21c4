/* Registers the extension's types on the module. */
#include "wfpy.h"

int wfpy_add_types(PyObject *m) {
  static const struct {
    const char *name;
    PyTypeObject *type;
  } types[] = {
      {"Device", &wfpy_DeviceType}, {"Stream", &wfpy_StreamType},       {"Event", &wfpy_EventType},
      {"Buffer", &wfpy_BufferType}, {"Graph", &wfpy_GraphType},         {"Scene", &wfpy_SceneType},
      {"World", &wfpy_WorldType},   {"Particles", &wfpy_ParticlesType}, {"Cloth", &wfpy_ClothType}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    if (PyType_Ready(types[i].type) < 0) return -1;
    if (PyModule_AddObjectRef(m, types[i].name, (PyObject *)types[i].type) < 0) return -1;
  }
  return 0;
}
