// Triangle meshes (cloth and collider shapes): positions and normals to view space.
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in float a_speed;

uniform mat4 u_model;
uniform mat4 u_view;
uniform mat4 u_proj;
uniform mat3 u_normal_view; // mat3(view) * transpose(inverse(mat3(model)))

out vec3 v_pos;
out vec3 v_normal;
out float v_speed;

void main() {
  vec4 p = u_view * (u_model * vec4(a_pos, 1.0));
  v_pos = p.xyz;
  v_normal = u_normal_view * a_normal;
  v_speed = a_speed;
  gl_Position = u_proj * p;
}
