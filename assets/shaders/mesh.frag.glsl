// Two-sided lighting: a back face (by winding) is lit with the normal reversed and its own colour.
// Closed shapes (u_two_sided = 0) are seen from outside only and keep their normals.
in vec3 v_pos;
in vec3 v_normal;
in float v_speed;

uniform vec3 u_color;
uniform vec3 u_back_color;
uniform int u_two_sided;
uniform int u_by_speed;
uniform float u_speed_max;

out vec4 o_color;

void main() {
  vec3 n = normalize(v_normal);
  vec3 albedo = u_color;
  if (u_two_sided != 0 && !gl_FrontFacing) {
    n = -n;
    albedo = u_back_color;
  }
  if (u_by_speed != 0) albedo = wf_speed_ramp(v_speed / u_speed_max);
  o_color = vec4(wf_shade(albedo, n, normalize(-v_pos), v_pos), 1.0);
}
